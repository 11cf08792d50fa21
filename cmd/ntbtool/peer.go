package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/ntb/emu"
)

// perfPeerCmd is the hidden command perf -procs runs as host 1.
const perfPeerCmd = "perf-peer"

// processLink opens host 0 of a two-host ring in this process and starts
// this executable as host 1, which translates its window and echoes
// doorbells until the link goes down.
func processLink(dir string, opts emu.Options, mw int64, model string) (*link, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, perfPeerCmd, "-dir", dir, "-mw", strconv.FormatInt(mw, 10))
	cmd.Env = append(os.Environ(), "GOSHMEM_NTB_MW_SIZE="+strconv.FormatInt(opts.MWMax, 10))
	if model != "" {
		cmd.Env = append(cmd.Env, "GOSHMEM_NTB_MODEL="+model)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	waited := false
	wait := func() error {
		if waited {
			return nil
		}
		waited = true
		return cmd.Wait()
	}
	host, err := emu.Open(dir, 0, 2, opts)
	if err != nil {
		return nil, errors.Join(err, cmd.Process.Kill(), wait())
	}
	l := &link{src: host.Right, close: func() error { return errors.Join(host.Close(), wait()) }}
	fail := func(err error) (*link, error) {
		return nil, errors.Join(err, cmd.Process.Kill(), l.close())
	}
	for _, p := range []*emu.Port{host.Left, host.Right} {
		if err := p.LinkEnable(); err != nil {
			return fail(err)
		}
	}
	if err := host.Right.WaitLink(time.Minute); err != nil {
		return fail(err)
	}
	deadline := time.Now().Add(time.Minute)
	var pause core.Backoff
	for {
		if l.win, err = host.Right.PeerMW(0); err == nil {
			return l, nil
		}
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("host 1 did not translate its window within a minute: %w", err))
		}
		pause.Pause()
	}
}

// runPerfPeer is host 1 of perf -procs.
func runPerfPeer(args []string, _, stderr io.Writer) error {
	fs := flag.NewFlagSet("ntbtool "+perfPeerCmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "the ring's directory")
	mw := fs.Int64("mw", 0, "the size of the window to translate")
	if err := parse(fs, args); err != nil {
		return err
	}
	opts, err := emu.OptionsFromEnv(nil, 2)
	if err != nil {
		return err
	}
	host, err := emu.Open(*dir, 1, 2, opts)
	if err != nil {
		return err
	}
	for _, p := range []*emu.Port{host.Left, host.Right} {
		if err := p.LinkEnable(); err != nil {
			return errors.Join(err, host.Close())
		}
	}
	if err := host.Left.WaitLink(time.Minute); err != nil {
		return errors.Join(err, host.Close())
	}
	if _, err := host.Left.MWSetTrans(0, *mw); err != nil {
		return errors.Join(err, host.Close())
	}
	echo(host.Left)
	return host.Close()
}
