package shmem_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/shmem"
)

// PEs running different programs fail Init, every one of them, with a
// message naming which PEs differ and in what.
func TestInitRejectsDifferentPrograms(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	perPE := func(pe int) []shmem.Option {
		if pe == 2 {
			return []shmem.Option{shmem.WithProgram("other", "beef")}
		}
		return []shmem.Option{shmem.WithProgram("prog", "cafe")}
	}
	world(t, 3, nil, perPE, func(pe int, w *shmem.World, err error) {
		require.ErrorIs(t, err, shmem.ErrInvalid)
		require.Nil(t, w)
		msg := err.Error()
		require.Contains(t, msg, "PEs run different programs")
		require.Contains(t, msg, "prog (")
		require.Contains(t, msg, "on PEs 0, 1; other (")
		require.Contains(t, msg, "on PE 2")
		require.Contains(t, msg, "differing in executable, sha256")
	})
}

func TestInitRejectsDifferentHeapSizes(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	perPE := func(pe int) []shmem.Option {
		return []shmem.Option{shmem.WithHeapSize(int64(1<<20 + pe%2*4096))}
	}
	world(t, 3, nil, perPE, func(pe int, w *shmem.World, err error) {
		require.ErrorIs(t, err, shmem.ErrInvalid)
		require.Contains(t, err.Error(), "SHMEM_SYMMETRIC_SIZE differs between PEs (1048576 bytes on PEs 0, 2; 1052672 bytes on PE 1)")
	})
}

func FuzzDecodeJobFacts(f *testing.F) {
	f.Add(shmem.EncodeJobFacts(1<<20, "prog"))
	f.Add(shmem.EncodeJobFacts(0, ""))
	f.Add([]byte(`{"heap":-1}`))
	f.Add([]byte(`{"heap":4096,"host":"h1","avail":1073741824}`))
	f.Add([]byte(`nonsense`))
	f.Fuzz(func(t *testing.T, b []byte) {
		heap, exe, err := shmem.DecodeJobFacts(b)
		if err != nil {
			if !errors.Is(err, shmem.ErrInvalid) {
				t.Fatalf("decode error %v does not unwrap to ErrInvalid", err)
			}
			return
		}
		heap2, exe2, err := shmem.DecodeJobFacts(shmem.EncodeJobFacts(heap, exe))
		require.NoError(t, err)
		require.Equal(t, heap, heap2)
		require.Equal(t, exe, exe2)
	})
}

// GlobalExit from one PE makes the others' blocking calls fail with the
// caller's status, and the exit hook replaces leaving the process.
func TestGlobalExitFailsEveryPEsBlockingCalls(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var hooked atomic.Int64
	hooked.Store(-1)
	perPE := func(int) []shmem.Option {
		return []shmem.Option{shmem.WithExitHook(func(status int) { hooked.Store(int64(status)) })}
	}
	lookup := shmLookup(t.TempDir(), nil)
	id := jobID()
	var wg sync.WaitGroup
	for pe, b := range bootstrap.NewLocal(3) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := shmem.Init(append(perPE(pe), shmem.WithBootstrap(b, id), shmem.WithEnv(lookup), shmem.WithHeapSize(1<<20))...)
			require.NoError(t, err)
			globalExitPE(t, pe, w, &hooked)
		}()
	}
	wg.Wait()
}

func globalExitPE(t *testing.T, pe int, w *shmem.World, hooked *atomic.Int64) {
	// flag[0] is what PEs 0 and 2 wait on; flag[1] counts, on PE 1, the
	// PEs done with Malloc. PE 1 exits only once both are: a PE still
	// inside the collective Malloc would see the exit there instead.
	flag, err := shmem.Malloc[int64](w, 2)
	require.NoError(t, err)
	var gerr *shmem.GlobalExitError
	if pe == 1 {
		require.NoError(t, shmem.WaitUntil(w, &flag[1], shmem.CmpEQ, 2))
		err := w.GlobalExit(7)
		require.ErrorAs(t, err, &gerr)
		require.Equal(t, shmem.GlobalExitError{PE: 1, Status: 7}, *gerr)
		require.EqualValues(t, 7, hooked.Load())
	} else {
		require.NoError(t, shmem.AtomicAdd(w, &flag[1], 1, 1))
		// Nobody ever sets the flag: only the global exit ends this.
		err := shmem.WaitUntil(w, &flag[0], shmem.CmpEQ, 1)
		require.ErrorAs(t, err, &gerr)
		require.Equal(t, 7, gerr.Status)
		require.Equal(t, 1, gerr.PE)
		require.ErrorIs(t, err, shmem.ErrClosed)
	}
	require.ErrorAs(t, w.BarrierAll(), &gerr, "every later blocking call fails too")
	require.ErrorAs(t, w.Finalize(), &gerr, "Finalize releases the PE and reports the exit")
}

// SHMEM_INFO makes PE 0 print the version, provider, parameters and heap
// size; SHMEM_DEBUG turns on debug messages in the World's logger.
func TestInfoAndDebugEnvironment(t *testing.T) {
	out := captureStderr(t, func() {
		world(t, 2, map[string]string{shmem.EnvInfo: "1", shmem.EnvDebug: "1"}, nil,
			func(pe int, w *shmem.World, err error) { require.NoError(t, err) })
	})
	require.Contains(t, out, fmt.Sprintf("goshmem: OpenSHMEM %d.%d (%s)", shmem.MajorVersion, shmem.MinorVersion, shmem.VendorString))
	require.Contains(t, out, "goshmem: provider loopback")
	require.Contains(t, out, "symmetric heap 1M per PE")
	require.Contains(t, out, "SHMEM_SYMMETRIC_SIZE=")
	require.Equal(t, 1, strings.Count(out, "goshmem: OpenSHMEM"), "only PE 0 prints")
	require.Contains(t, out, "level=DEBUG msg=initialized")
	major, minor := shmem.InfoGetVersion()
	require.Equal(t, [2]int{1, 6}, [2]int{major, minor})
	require.Equal(t, "goshmem", shmem.InfoGetName())
}

// SHMEM_INFO, pasted into bug reports and job logs, says that the job's
// secret is set and how long it is, never what it is.
func TestInfoHidesTheSecret(t *testing.T) {
	const secret = "00112233445566778899aabbccddeeff0123"
	out := captureStderr(t, func() {
		world(t, 2, map[string]string{shmem.EnvInfo: "1", bootstrap.EnvSecret: secret}, nil,
			func(pe int, w *shmem.World, err error) { require.NoError(t, err) })
	})
	require.Contains(t, out, bootstrap.EnvSecret+"=(set, 36 characters, not shown)")
	require.NotContains(t, out, secret)
	require.NotContains(t, out, secret[:8], "no part of the secret either")
}

// captureStderr runs f with the process's standard error sent to a pipe
// and returns what f wrote there.
func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	saved := os.Stderr
	os.Stderr = w
	var out bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&out, r); close(done) }()
	f()
	os.Stderr = saved
	w.Close()
	<-done
	r.Close()
	return out.String()
}

// Six PEs on two cores queue for one lock a hundred times each; the
// counter they update without atomics under it loses nothing. The lock
// and counter are in the heap, then in registered static data, as a C
// program's "static long lock" is.
func TestLockQueueManyPEs(t *testing.T) {
	const n, rounds = 6, 100
	world(t, n, nil, nil, func(pe int, w *shmem.World, err error) {
		require.NoError(t, err)
		symMems(t, w, 1, func(where string, sm *symMem) {
			x := symMake[int64](t, sm, 2)
			lock, counter := &x[0], &x[1]
			for range rounds {
				require.NoError(t, shmem.SetLock(w, lock))
				v, err := shmem.G(w, counter, 0)
				require.NoError(t, err)
				require.NoError(t, shmem.P(w, counter, v+1, 0))
				require.NoError(t, shmem.ClearLock(w, lock))
			}
			require.NoError(t, w.BarrierAll())
			if pe == 0 {
				require.Equal(t, int64(n*rounds), *counter, where)
			}
			require.NoError(t, w.BarrierAll())
		})
	})
}

// Strides so large that the span overflows are refused, not wrapped.
func TestStridedOverflow(t *testing.T) {
	world(t, 1, nil, nil, func(pe int, w *shmem.World, err error) {
		require.NoError(t, err)
		sym, err := shmem.Malloc[int64](w, 4)
		require.NoError(t, err)
		src := make([]int64, 4)
		huge := int(^uint(0)>>1)/2 + 1
		for _, err := range []error{
			shmem.IPut(w, sym, src, huge, 1, 3, 0),
			shmem.IGet(w, src, sym, huge, 1, 3, 0),
			shmem.IPut(w, sym, src, 1, huge, 3, 0),
			shmem.IGet(w, src, sym, 1, huge, 3, 0),
		} {
			require.ErrorIs(t, err, shmem.ErrInvalid)
			// The error says what went wrong, not the wrapped span.
			require.Regexp(t, `^shmem: i(put|get) of 3 elements at a stride of \d+ overflows`, err.Error())
		}
		require.Equal(t, make([]int64, 4), sym)
	})
}

// WithLockedCallers, a C program's calls, lengthens the waiters' longest
// sleep, not their wake-up: PEs whose callers are locked to their threads
// wait for each other's puts and in barriers as before.
func TestLockedCallersWait(t *testing.T) {
	perPE := func(int) []shmem.Option { return []shmem.Option{shmem.WithLockedCallers()} }
	world(t, 2, nil, perPE, func(pe int, w *shmem.World, err error) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		require.NoError(t, err)
		require.Greater(t, shmem.WaitSliceOf(w), time.Millisecond)
		flag, err := shmem.Malloc[int64](w, 1)
		require.NoError(t, err)
		for round := int64(1); round <= 20; round++ {
			if pe == 0 {
				require.NoError(t, shmem.P(w, &flag[0], round, 1))
				require.NoError(t, w.Quiet())
			} else {
				require.NoError(t, shmem.WaitUntil(w, &flag[0], shmem.CmpEQ, round))
			}
			require.NoError(t, w.BarrierAll())
		}
		require.NoError(t, shmem.Free(w, flag))
	})
	world(t, 1, nil, nil, func(_ int, w *shmem.World, err error) {
		require.NoError(t, err)
		require.Equal(t, time.Millisecond, shmem.WaitSliceOf(w), "a Go program's waiters sleep 1 ms at most")
	})
}
