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
	"time"

	"github.com/goshmem/goshmem/internal/version"
	"github.com/goshmem/goshmem/launcher"
)

const usageText = `usage: oshrun -np N [flags] PROGRAM [ARGS...]
       oshrun [-np N] --host a:2,b:2 | --hostfile FILE [-N K] [flags] PROGRAM [ARGS...]

Runs N copies of PROGRAM as the PEs of one goshmem job, with a bootstrap
store they connect to, and exits with the job's status: 0 if every PE
exited 0, else the status of the first PE that failed (128+signal if a
signal killed it). Without --host or --hostfile every PE runs on this host.
With them, PEs are dealt to the hosts' slots in order; PEs on other hosts
are started through ssh (GOSHMEM_RSH sets the command, e.g. "ssh -p 2222"),
which runs this oshrun, at the same path, with the same PROGRAM path, on
each host; there they get their login's environment plus GOSHMEM_*,
SHMEM_* and the -x variables. Flags must come before PROGRAM; everything
after it is passed to PROGRAM unchanged. Every flag may be given with one
dash or two (-np, --np); -x, -H, --host, --hostfile, -N, --launch-agent,
--oversubscribe, --bind-to and --tag-output are taken as Open MPI's mpirun
takes them.

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

// The longest -grace and -stopped-after: beyond them a job that is ending,
// or a PE that will never run again, looks like one that is fine.
const (
	maxGrace        = time.Hour
	maxStoppedAfter = 24 * time.Hour
)

// run is oshrun without the process: it parses args, runs the job and
// returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && args[0] == launcher.AgentFlag {
		// Started on another host by a launcher: the job comes on stdin.
		return launcher.RunAgent(ctx, os.Stdin, stdout, stderr)
	}
	fs := flag.NewFlagSet("oshrun", flag.ContinueOnError)
	// The flag package's own errors are read before they are shown, to
	// turn an unknown flag into a suggestion.
	var parseOut strings.Builder
	fs.SetOutput(&parseOut)
	var (
		np       int
		perHost  int
		cpubind  = launcher.BindShare
		env      envFlag
		hosts    hostsFlag
		hostfile = fs.String("hostfile", "", "`FILE` listing the hosts, Open MPI's syntax: one per line, NAME [slots=N], # comments")
		agent    = fs.String("launch-agent", "", "`command` that starts oshrun on other hosts (default: this oshrun's path)")
		provider = fs.String("provider", "", "transport to use: sets GOSHMEM_PROVIDER in every PE (a name, a list, or ^name)")
		tag      = fs.Bool("tag", false, "prefix every line of PE output with \"[pe N] \"")
		bind     = fs.String("bind", "", "`address` the bootstrap store listens on (default "+launcher.DefaultBind+", or every interface when PEs run on other hosts)")
		grace    = fs.Duration("grace", launcher.DefaultGrace, "time PEs get between SIGTERM and SIGKILL when the job is ended, from 0 (kill at once) to "+maxGrace.String())
		stopped  = fs.Duration("stopped-after", launcher.DefaultStoppedAfter, "how long a PE may stay stopped by a signal (SIGSTOP, SIGTSTP) before the job loses it and ends; 0 never, else at most "+maxStoppedAfter.String())
		verbose  = fs.Bool("v", false, "print the job id, the store's address, PE pids and membership changes to stderr")
		showVer  = fs.Bool("version", false, "print goshmem's version and exit")
	)
	fs.IntVar(&np, "np", 0, "number of PEs to start (required, at least 1)")
	fs.IntVar(&np, "n", 0, "same as -np")
	fs.BoolVar(tag, "tag-output", false, "same as -tag")
	fs.Var(cpubindFlag{&cpubind}, "cpubind", "same as --bind-to core")
	fs.Var(bindToFlag{&cpubind}, "bind-to", "`placement` of each host's PEs on its CPUs: share binds each to its share of the CPUs (the CPUs over the host's PEs, as GOMAXPROCS), where they fit, else leaves them unbound; core binds the i-th PE of a host to its i-th CPU, round them again where the PEs outnumber them; none leaves them to the kernel. The last of -cpubind and --bind-to wins")
	fs.Var(&env, "x", "`VAR=value` sets VAR in every PE (repeatable); -x VAR passes oshrun's VAR to PEs on other hosts (those on this host get oshrun's whole environment)")
	fs.Var(&hosts, "host", "`hosts` to run on: NAME[:SLOTS],... (slots 1 when absent); PEs fill the first host's slots, then the next's")
	fs.Var(&hosts, "H", "same as -host")
	fs.StringVar(hostfile, "machinefile", "", "same as -hostfile")
	fs.IntVar(&perHost, "N", 0, "PEs per host: every host gets this many slots (with -host or -hostfile)")
	fs.IntVar(&perHost, "npernode", 0, "same as -N")
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
	hostList := hosts.hosts
	if *hostfile != "" {
		f, err := os.Open(*hostfile)
		if err != nil {
			return usageError("-hostfile: %v", err)
		}
		fromFile, err := launcher.ReadHostfile(f, *hostfile)
		f.Close()
		if err != nil {
			return usageError("-hostfile: %v", err)
		}
		if hostList != nil {
			return usageError("give -host or -hostfile, not both")
		}
		hostList = fromFile
	}
	switch {
	case perHost < 0:
		return usageError("-N %d: want a positive number of PEs per host", perHost)
	case perHost > 0 && hostList == nil:
		return usageError("-N needs -host or -hostfile: it says how many PEs each host runs")
	case hostList == nil && np < 1:
		return usageError("-np N is required, with N at least 1 (got %d)", np)
	case np < 0:
		return usageError("-np %d: want at least 1 PE, or none with -host to fill every slot", np)
	}
	var agentCmd []string
	if *agent != "" {
		agentCmd = strings.Fields(*agent)
	}
	if *grace < 0 || *grace > maxGrace {
		return usageError("-grace %v: want a duration from 0 (SIGKILL at once) to %v, such as 3s", *grace, maxGrace)
	}
	if *stopped < 0 || *stopped > maxStoppedAfter {
		return usageError("-stopped-after %v: want 0 (never lose a stopped PE) or a duration up to %v, such as 5s", *stopped, maxStoppedAfter)
	}
	if fs.NArg() == 0 {
		return usageError("no PROGRAM given")
	}
	g := *grace
	if g == 0 {
		g = -1 // at once; the launcher reads 0 as "default"
	}
	st := *stopped
	if st == 0 {
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
		Env:          env.set,
		Export:       env.export,
		Hosts:        hostList,
		PerHost:      perHost,
		LaunchAgent:  agentCmd,
	})
	if err != nil && ctx.Err() == nil {
		// An interruption has already been reported by the launcher.
		fmt.Fprintf(stderr, "oshrun: %v\n", err)
	}
	return code
}
