package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/goshmem/goshmem/internal/version"
	"github.com/goshmem/goshmem/launcher"
)

const usageText = `usage: oshrun -np N [flags] PROGRAM [ARGS...]

Runs N copies of PROGRAM as the PEs of one goshmem job on this host, with
a bootstrap store they connect to, and exits with the job's status: 0 if
every PE exited 0, else the status of the first PE that failed (128+signal
if a signal killed it). Flags must come before PROGRAM; everything after it
is passed to PROGRAM unchanged. Every flag may be given with one dash or
two (-np, --np); -x, --oversubscribe, --bind-to and --tag-output are taken
as Open MPI's mpirun takes them.

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
	// The flag package's own errors are read before they are shown, to
	// turn an unknown flag into a suggestion.
	var parseOut strings.Builder
	fs.SetOutput(&parseOut)
	var (
		np       int
		cpubind  bool
		env      envFlag
		provider = fs.String("provider", "", "transport to use: sets GOSHMEM_PROVIDER in every PE (a name, a list, or ^name)")
		tag      = fs.Bool("tag", false, "prefix every line of PE output with \"[pe N] \"")
		bind     = fs.String("bind", launcher.DefaultBind, "`address` the bootstrap store listens on; make it reachable when PEs run on other hosts")
		grace    = fs.Duration("grace", launcher.DefaultGrace, "time PEs get between SIGTERM and SIGKILL when the job is ended; 0 kills at once")
		stopped  = fs.Duration("stopped-after", launcher.DefaultStoppedAfter, "how long a PE may stay stopped by a signal (SIGSTOP, SIGTSTP) before the job loses it and ends; 0 never")
		verbose  = fs.Bool("v", false, "print the job id, the store's address, PE pids and membership changes to stderr")
		showVer  = fs.Bool("version", false, "print goshmem's version and exit")
	)
	fs.IntVar(&np, "np", 0, "number of PEs to start (required, at least 1)")
	fs.IntVar(&np, "n", 0, "same as -np")
	fs.BoolVar(tag, "tag-output", false, "same as -tag")
	fs.BoolVar(&cpubind, "cpubind", false, "bind PE r to the r-th CPU; PEs beyond the CPUs are dealt round them again (PE r to CPU r mod CPUs)")
	fs.Var(bindToFlag{&cpubind}, "bind-to", "`core` is -cpubind, none leaves PEs unbound (the default); the last of -cpubind and --bind-to wins")
	fs.Var(&env, "x", "`VAR=value` sets VAR in every PE (repeatable); -x VAR is accepted and changes nothing, since every PE gets oshrun's environment")
	fs.Bool("oversubscribe", false, "accepted and changes nothing: oshrun always starts more PEs than CPUs when asked to")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText)
		fs.PrintDefaults()
	}
	usageError := func(format string, a ...any) int {
		fs.SetOutput(stderr)
		fmt.Fprintf(stderr, "oshrun: "+format+"\n", a...)
		fs.Usage()
		return launcher.ExitUsage
	}
	if err := fs.Parse(args); err != nil {
		if name, ok := unknownFlag(err); ok {
			if s := suggest(fs, name); s != "" {
				return usageError("unknown flag -%s; did you mean -%s?", name, s)
			}
			return usageError("unknown flag -%s", name)
		}
		io.WriteString(stderr, parseOut.String()) // the error and the usage, or the usage asked for
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return launcher.ExitUsage
	}
	fs.SetOutput(stderr)
	if *showVer {
		fmt.Fprintln(stdout, version.Line("oshrun"))
		return 0
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
	st := *stopped
	if st <= 0 {
		st = -1 // never; the launcher reads 0 as "default"
	}
	code, err := launcher.Run(ctx, launcher.Options{
		NP:           np,
		Program:      fs.Arg(0),
		Args:         fs.Args()[1:],
		Provider:     *provider,
		Tag:          *tag,
		Stdout:       stdout,
		Stderr:       stderr,
		Grace:        g,
		StoppedAfter: st,
		Bind:         *bind,
		Verbose:      *verbose,
		CPUBind:      cpubind,
		Env:          env,
	})
	if err != nil && ctx.Err() == nil {
		// An interruption has already been reported by the launcher.
		fmt.Fprintf(stderr, "oshrun: %v\n", err)
	}
	return code
}
