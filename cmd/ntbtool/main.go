// Command ntbtool inspects and measures the emulated NTB device, without
// any protocol on top, the way Linux's ntb_tool, ntb_perf and
// ntb_pingpong do for hardware.
//
//	ntbtool info -job DIR -host H [-side left|right] [-tag T] [-json]
//	ntbtool perf [-model gen3x8|off] [-sizes 1K,64K,4M] [-time 200ms] [-n 2000] [-procs] [-json]
//	ntbtool sim [-hosts 2,4,8] [-model gen3x8|gen4x16] [-seed S] [-protocol ring,seed] [-json] [-plot FILE] [experiment ...]
//
// info reads one port of a running ring from its link file: link state,
// both sides' liveness, scratchpads, doorbells and mask, window
// translations and counters. -job is the job's directory, or a job id
// whose directory core.JobDir names.
//
// perf makes its own two-host ring in a scratch directory, the second host
// a goroutine or, with -procs, a process running this executable, and
// measures the raw link: DMA and CPU-store throughput through a
// window for each size, and the latency of a doorbell round trip and of
// peer scratchpad reads and writes. The GOSHMEM_NTB_* variables set the
// timing model; -model overrides GOSHMEM_NTB_MODEL.
//
// sim runs the ring provider over the simulated fabric of
// internal/ntb/sim, every host a goroutine, in virtual time, and prints
// its experiments' tables: put and get by hop count, barrier, alltoall
// and a cut by ring size, and a check against the emulator at 2 hosts
// (docs/ntb-sim.md).
//
// Exit status: 0 on success, 1 on a failure, 2 on a usage error.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/goshmem/goshmem/internal/version"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage:
  ntbtool info -job DIR -host H [-side left|right] [-tag T] [-json]
  ntbtool perf [-model gen3x8|off] [-sizes LIST] [-time D] [-n N] [-procs] [-json]
  ntbtool sim [-hosts LIST] [-model gen3x8|gen4x16] [-seed S] [-protocol ring,seed] [-size N] [-json] [experiment ...]
  ntbtool --version
run "ntbtool info -h", "ntbtool perf -h" or "ntbtool sim -h" for the flags`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	var cmd func([]string, io.Writer, io.Writer) error
	switch args[0] {
	case "info":
		cmd = runInfo
	case "perf":
		cmd = runPerf
	case "sim":
		cmd = runSim
	case perfPeerCmd:
		cmd = runPerfPeer
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return 0
	case "-version", "--version", "version":
		fmt.Fprintln(stdout, version.Line("ntbtool"))
		return 0
	default:
		fmt.Fprintf(stderr, "ntbtool: unknown command %q\n%s\n", args[0], usage)
		return 2
	}
	err := cmd(args[1:], stdout, stderr)
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "ntbtool:", err)
		return 2
	}
	fmt.Fprintln(stderr, "ntbtool:", err)
	return 1
}

// usageError is a bad command line: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// parse parses a subcommand's flags, turning their errors into
// usageErrors.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
