package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	_ "github.com/goshmem/goshmem/providers/ntbring"
	_ "github.com/goshmem/goshmem/providers/tcp"
	"github.com/goshmem/goshmem/shmem"
)

// globalExitRacePE is a PE of a job in which PE 0 calls
// global_exit(args[0]) and every other PE returns from main, without
// finalizing, as soon as a blocking call reports the exit: the quickest a
// program can leave once it has seen it, so the launcher must already
// know whose exit it is.
func globalExitRacePE(rank int, args []string) int {
	w, err := shmem.Init(shmem.WithHeapSize(1 << 20))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 90
	}
	flag, err := shmem.Malloc[int64](w, 1)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 91
	}
	if err := w.BarrierAll(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 91
	}
	if rank == 0 {
		status, _ := strconv.Atoi(args[0])
		w.GlobalExit(status)
		return 92 // not reached
	}
	// Nobody sets the flag: only the global exit ends the wait.
	err = shmem.WaitUntil(w, &flag[0], shmem.CmpEQ, 1)
	var gerr *shmem.GlobalExitError
	if errors.As(err, &gerr) {
		return 0
	}
	fmt.Printf("PE %d: the wait ended with %v\n", rank, err)
	return 93
}

// globalExitBarrierPE is a PE of a job in which PE 0 calls
// global_exit(args[0]) while every other PE waits in BarrierAll. The
// others outlive the launcher's SIGTERM to say what their barrier
// returned, then leave at once, which other PEs may see as a loss.
func globalExitBarrierPE(rank int, args []string) int {
	signal.Ignore(syscall.SIGTERM)
	status, _ := strconv.Atoi(args[0])
	w, err := shmem.Init(shmem.WithHeapSize(1 << 20))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 90
	}
	arrived, err := shmem.Malloc[int64](w, 1)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 91
	}
	if err := w.BarrierAll(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 91
	}
	if rank == 0 {
		// Every other PE is at, or about to enter, a barrier that cannot
		// end without this PE.
		if err := shmem.WaitUntil(w, &arrived[0], shmem.CmpEQ, int64(w.NPEs()-1)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 94
		}
		w.GlobalExit(status)
		return 92 // not reached
	}
	if err := shmem.AtomicAdd(w, &arrived[0], 1, 0); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 95
	}
	err = w.BarrierAll()
	var gerr *shmem.GlobalExitError
	if errors.As(err, &gerr) && gerr.PE == 0 && gerr.Status == status {
		fmt.Printf("PE %d: global exit seen\n", rank)
	} else {
		fmt.Printf("PE %d: the barrier ended with %v\n", rank, err)
	}
	return 0
}

// A PE that returns from main as soon as it sees another's global exit is
// not blamed for leaving: the launcher has the exit's record before any PE
// can see it, and the job exits with the status global_exit was given.
// The window, if there is one, is narrow: the jobs are repeated.
func TestGlobalExitStatusWinsOverPEsThatLeave(t *testing.T) {
	t.Setenv(peEnv, "globalexit-race")
	for _, tc := range []struct {
		provider string
		np, jobs int
	}{{"tcp", 4, 12}, {"ntbring", 3, 8}} {
		t.Run(tc.provider, func(t *testing.T) {
			for i := range tc.jobs {
				status := 3 + i%5
				t.Setenv(core.EnvShmDir, t.TempDir())
				code, stdout, stderr := runOshrun(t, "-np", strconv.Itoa(tc.np), "-provider", tc.provider,
					os.Args[0], strconv.Itoa(status))
				require.Equal(t, status, code, "job %d:\n%s%s", i, stdout, stderr)
				require.Contains(t, stderr, fmt.Sprintf("oshrun: PE 0 called global_exit(%d)", status), "job %d", i)
				require.NotContains(t, stderr, "without finalizing", "job %d", i)
			}
		})
	}
}

// PEs waiting in a barrier when another calls global_exit learn of the
// exit, never of a lost peer, although the caller's process is gone and
// the others leave one by one as they learn it.
func TestGlobalExitEndsBarriersWithItsError(t *testing.T) {
	t.Setenv(peEnv, "globalexit-barrier")
	for _, tc := range []struct {
		provider string
		np, jobs int
	}{{"loopback", 4, 3}, {"tcp", 4, 6}, {"ntbring", 3, 4}} {
		t.Run(tc.provider, func(t *testing.T) {
			for i := range tc.jobs {
				const status = 6
				t.Setenv(core.EnvShmDir, t.TempDir())
				code, stdout, stderr := runOshrun(t, "-np", strconv.Itoa(tc.np), "-provider", tc.provider,
					"-grace", "30s", os.Args[0], strconv.Itoa(status))
				require.Equal(t, status, code, "job %d:\n%s%s", i, stdout, stderr)
				for r := 1; r < tc.np; r++ {
					require.Contains(t, stdout, fmt.Sprintf("PE %d: global exit seen\n", r), "job %d:\n%s%s", i, stdout, stderr)
				}
			}
		})
	}
}
