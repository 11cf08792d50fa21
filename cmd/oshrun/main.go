package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/goshmem/goshmem/launcher"
)

const usageText = `usage: oshrun -np N [flags] PROGRAM [ARGS...]

Runs N copies of PROGRAM as the PEs of one goshmem job on this host, with
a bootstrap store they connect to, and exits with the job's status: 0 if
every PE exited 0, else the status of the first PE that failed (128+signal
if a signal killed it). Flags must come before PROGRAM; everything after it
is passed to PROGRAM unchanged.

flags:
`

func main() {
	ctx, caught, stop := signalContext()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if sig := caught(); sig != 0 && code == launcher.ExitInterrupted {
		code = 128 + int(sig)
	}
	os.Exit(code)
}

// signalContext returns a context cancelled by the first SIGINT, SIGTERM or
// SIGHUP, and a function reporting which one arrived. Later signals are
// caught and ignored while the job ends in order (bounded by -grace).
func signalContext() (context.Context, func() syscall.Signal, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	got := make(chan syscall.Signal, 1)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			got <- s.(syscall.Signal)
			cancel(fmt.Errorf("received %v", s))
		case <-done:
		}
	}()
	caught := func() syscall.Signal {
		select {
		case s := <-got:
			got <- s
			return s
		default:
			return 0
		}
	}
	stop := func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
	return ctx, caught, stop
}

// run is oshrun without the process: it parses args, runs the job and
// returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("oshrun", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		np       int
		provider = fs.String("provider", "", "transport to use: sets GOSHMEM_PROVIDER in every PE (a name, a list, or ^name)")
		tag      = fs.Bool("tag", false, "prefix every line of PE output with \"[pe N] \"")
		bind     = fs.String("bind", launcher.DefaultBind, "`address` the bootstrap store listens on; make it reachable when PEs run on other hosts")
		grace    = fs.Duration("grace", launcher.DefaultGrace, "time PEs get between SIGTERM and SIGKILL when the job is ended; 0 kills at once")
		verbose  = fs.Bool("v", false, "print the job id, the store's address, PE pids and membership changes to stderr")
		cpubind  = fs.Bool("cpubind", false, "bind PE r to the r-th CPU; PEs beyond the CPUs are dealt round them again (PE r to CPU r mod CPUs)")
	)
	fs.IntVar(&np, "np", 0, "number of PEs to start (required, at least 1)")
	fs.IntVar(&np, "n", 0, "same as -np")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return launcher.ExitUsage // flag has printed the error and the usage
	}
	usageError := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "oshrun: "+format+"\n", a...)
		fs.Usage()
		return launcher.ExitUsage
	}
	if np < 1 {
		return usageError("-np N is required, with N at least 1 (got %d)", np)
	}
	if fs.NArg() == 0 {
		return usageError("no PROGRAM given")
	}
	g := *grace
	if g <= 0 {
		g = -1 // at once; the launcher reads 0 as "default"
	}
	code, err := launcher.Run(ctx, launcher.Options{
		NP:       np,
		Program:  fs.Arg(0),
		Args:     fs.Args()[1:],
		Provider: *provider,
		Tag:      *tag,
		Stdout:   stdout,
		Stderr:   stderr,
		Grace:    g,
		Bind:     *bind,
		Verbose:  *verbose,
		CPUBind:  *cpubind,
	})
	if err != nil && ctx.Err() == nil {
		// An interruption has already been reported by the launcher.
		fmt.Fprintf(stderr, "oshrun: %v\n", err)
	}
	return code
}
