package tcp_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/conformance"
	"github.com/goshmem/goshmem/core"
)

// Child scenarios: this test binary started as one PE of a job.
const (
	envScenario   = "TCPTEST_SCENARIO"
	envRegionSize = "TCPTEST_REGION"
)

// runScenario runs one PE of a scenario and returns its exit status.
func runScenario(name string) int {
	if name == "raw" {
		return rawPeer()
	}
	job, launched, err := bootstrap.JobFromEnv(os.LookupEnv)
	if err != nil || !launched {
		fmt.Fprintf(os.Stderr, "scenario %s: not started as a PE of a job (%v)\n", name, err)
		return 2
	}
	b, err := bootstrap.Connect(job, time.Minute)
	if err != nil {
		fmt.Fprintf(os.Stderr, "scenario %s: bootstrap: %v\n", name, err)
		return 2
	}
	size, _ := strconv.Atoi(os.Getenv(envRegionSize))
	d, r, err := openTCP(b, job, size)
	if err != nil {
		fmt.Fprintf(os.Stderr, "scenario %s: %v\n", name, err)
		return 1
	}
	switch name {
	case "serve":
		// Serve the parent's operations until it is done, then leave.
		err = errors.Join(b.Barrier(), d.Close(), b.Close())
	case "lost":
		err = lostScenario(b, d, r)
	default:
		err = fmt.Errorf("no scenario %q", name)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "scenario %s, PE %d: %v\n", name, job.Rank, err)
		return 1
	}
	return 0
}

// openTCP opens the tcp provider and a region of size bytes.
func openTCP(b core.Bootstrap, job bootstrap.Job, size int) (core.Domain, core.Region, error) {
	return openTCPWith(b, job, size, false)
}

// openTCPWith is openTCP, for callers locked to their threads if locked
// (core.Config.LockedCallers).
func openTCPWith(b core.Bootstrap, job bootstrap.Job, size int, locked bool) (core.Domain, core.Region, error) {
	p, err := core.Lookup("tcp")
	if err != nil {
		return nil, nil, err
	}
	d, err := p.Open(&core.Config{Bootstrap: b, JobID: job.JobID, Secret: job.Secret, LockedCallers: locked})
	if err != nil {
		return nil, nil, err
	}
	r, err := d.NewRegion(size)
	if err != nil {
		return nil, nil, errors.Join(err, d.Close())
	}
	return d, r, nil
}

// lostScenario: PE 1 says it is ready and waits to be cut off; PE 0 reads
// from PE 1 until that fails, and says how.
func lostScenario(b core.Bootstrap, d core.Domain, r core.Region) error {
	if err := b.Barrier(); err != nil {
		return err
	}
	if d.Rank() == 1 {
		fmt.Println("ready")
		select {} // until the test kills this process
	}
	ep, err := d.NewEndpoint(core.EndpointOptions{})
	if err != nil {
		return err
	}
	buf := make([]byte, 8)
	for {
		if err = ep.Get(1, r, 0, buf); err != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	var lost *core.PeerLostError
	if !errors.As(err, &lost) || lost.PE != 1 {
		return fmt.Errorf("get from PE 1 failed, but not as PE 1 lost: %w", err)
	}
	fmt.Printf("lost: %v\n", err)
	// The bootstrap still waits for PE 1: leave without a clean close.
	os.Exit(0)
	return nil
}

// A host that stops answering, without closing anything: PE 1's side of
// the veth pair goes down while PE 0 reads from it. PE 0's get fails with
// PE 1 lost within about GOSHMEM_TCP_TIMEOUT, never hangs.
func TestHostVanishes(t *testing.T) {
	if testing.Short() {
		t.Skip("process runs are skipped in -short mode")
	}
	p := newNetnsPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	env := []string{envScenario + "=lost", envRegionSize + "=4096", "GOSHMEM_TCP_TIMEOUT=2s",
		bootstrap.EnvSecret + "=" + hex.EncodeToString(secret)}
	var outs [2]conformance.SyncBuffer
	cmds := [2]*exec.Cmd{}
	for rank := range 2 {
		cmds[rank] = p.run(ctx, rank, env)
		cmds[rank].Stdout, cmds[rank].Stderr = &outs[rank], &outs[rank]
		require.NoError(t, cmds[rank].Start())
	}
	defer func() { _ = cmds[1].Process.Kill(); _ = cmds[1].Wait() }()
	require.Eventually(t, func() bool { return strings.Contains(outs[1].String(), "ready") },
		time.Minute, 10*time.Millisecond, "PE 1 never got ready:\n%s\n%s", &outs[0], &outs[1])
	out, err := exec.Command("ip", "-n", p.ns[1], "link", "set", p.dev[1], "down").CombinedOutput()
	require.NoError(t, err, "%s", out)
	err = cmds[0].Wait()
	require.NoError(t, err, "PE 0:\n%s", &outs[0])
	require.Contains(t, outs[0].String(), "lost: ")
	require.Contains(t, outs[0].String(), "PE 1 lost")
	t.Logf("PE 0: %s", &outs[0])
}

// procPair starts this binary as PE 1 of a 2-PE job whose PE 0 is this
// process, with a region of size bytes, and returns PE 0's endpoint and
// region. The job ends when the benchmark does.
func procPair(b *testing.B, size int) (core.Endpoint, core.Region) {
	return procPairWith(b, size, false)
}

// lockedProcPair is procPair with PE 0's callers locked to their threads
// (core.Config.LockedCallers), as a C program's are.
func lockedProcPair(b *testing.B, size int) (core.Endpoint, core.Region) {
	return procPairWith(b, size, true)
}

func procPairWith(b *testing.B, size int, locked bool) (core.Endpoint, core.Region) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	srv := bootstrap.NewServer(ln, 2, secret)
	go func() { _ = srv.Serve() }()
	b.Cleanup(func() { _ = srv.Close() })

	job := bootstrap.Job{Rank: 0, Size: 2, JobID: "bench", Addr: ln.Addr().String(), Secret: secret}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envScenario+"=serve", envRegionSize+"="+strconv.Itoa(size),
		bootstrap.EnvRank+"=1", bootstrap.EnvSize+"=2", bootstrap.EnvJobID+"=bench",
		bootstrap.EnvBootstrap+"="+job.Addr, bootstrap.EnvSecret+"="+hex.EncodeToString(secret))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(b, cmd.Start())

	boot, err := bootstrap.Dial(job.Addr, 0, 2, secret, time.Minute)
	require.NoError(b, err)
	d, r, err := openTCPWith(boot, job, size, locked)
	require.NoError(b, err, "PE 1:\n%s", &out)
	ep, err := d.NewEndpoint(core.EndpointOptions{})
	require.NoError(b, err)
	b.Cleanup(func() {
		require.NoError(b, ep.Quiet())
		require.NoError(b, boot.Barrier())
		require.NoError(b, errors.Join(d.Close(), boot.Close()))
		require.NoError(b, cmd.Wait(), "PE 1:\n%s", &out)
	})
	return ep, r
}

// rawPeer is the far end of the raw TCP baselines: it listens on
// 127.0.0.1, prints its address, and answers each 8-byte message of its
// first connection with the same 8 bytes, or with raw mode "sink"
// consumes everything.
func rawPeer() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(ln.Addr())
	c, err := ln.Accept()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if os.Getenv(envRawMode) == "sink" {
		buf := make([]byte, 4<<20)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return 0
			}
		}
	}
	var buf [8]byte
	for {
		if _, err := io.ReadFull(c, buf[:]); err != nil {
			return 0
		}
		if _, err := c.Write(buf[:]); err != nil {
			return 0
		}
	}
}

const envRawMode = "TCPTEST_RAW"

// rawPair starts rawPeer in a process and returns a connection to it.
func rawPair(b *testing.B, mode string) net.Conn {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envScenario+"=raw", envRawMode+"="+mode)
	out, err := cmd.StdoutPipe()
	require.NoError(b, err)
	require.NoError(b, cmd.Start())
	addr, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(b, err)
	c, err := net.Dial("tcp", strings.TrimSpace(addr))
	require.NoError(b, err)
	b.Cleanup(func() {
		_ = c.Close()
		_ = cmd.Wait()
	})
	return c
}

// BenchmarkProcRawPingPong8 is the floor under the latencies above: an
// 8-byte round trip between two processes over plain Go TCP sockets.
func BenchmarkProcRawPingPong8(b *testing.B) {
	c := rawPair(b, "echo")
	buf := make([]byte, 8)
	for b.Loop() {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProcRawStream4MiB is the ceiling over the bandwidths above: one
// Go TCP stream between two processes, written 4 MiB at a time.
func BenchmarkProcRawStream4MiB(b *testing.B) {
	c := rawPair(b, "sink")
	buf := make([]byte, 4<<20)
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
}
