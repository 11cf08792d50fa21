package core_test

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
)

func bootstrapLocal(n int) []core.Bootstrap {
	var out []core.Bootstrap
	for _, b := range bootstrap.NewLocal(n) {
		out = append(out, b)
	}
	return out
}

type fakeProvider struct {
	name string
	info core.Info
}

func (p fakeProvider) Name() string { return p.name }
func (p fakeProvider) Info() core.Info {
	in := p.info
	in.Name = p.name
	return in
}
func (p fakeProvider) Open(*core.Config) (core.Domain, error) { return nil, core.ErrNotSupported }

// The registry is process-wide; these names are unique to this test.
var registerOnce sync.Once

func registerFakes() {
	registerOnce.Do(func() {
		core.Register(fakeProvider{"t-shm", core.Info{Locality: core.OneHost, Preference: 100}})
		core.Register(fakeProvider{"t-net", core.Info{Locality: core.AnyHost, Preference: 50}})
		core.Register(fakeProvider{"t-ring", core.Info{Locality: core.AnyHost}})
	})
}

func TestRegisterPanics(t *testing.T) {
	registerFakes()
	require.PanicsWithValue(t, "core: Register of nil provider", func() { core.Register(nil) })
	require.Panics(t, func() { core.Register(fakeProvider{name: ""}) })
	require.Panics(t, func() { core.Register(fakeProvider{name: "Bad Name"}) })
	require.PanicsWithValue(t, "core: Register called twice for provider t-shm", func() {
		core.Register(fakeProvider{name: "t-shm"})
	})
}

func TestProvidersSorted(t *testing.T) {
	registerFakes()
	names := core.Names()
	for i := 1; i < len(names); i++ {
		require.Less(t, names[i-1], names[i])
	}
	require.Subset(t, names, []string{"t-net", "t-ring", "t-shm"})
}

func TestSelect(t *testing.T) {
	registerFakes()
	for _, tc := range []struct {
		spec  string
		hosts int
		want  string
		err   error
		msg   string
	}{
		{spec: "", hosts: 1, want: "t-shm"},
		{spec: "", hosts: 3, want: "t-net"},
		{spec: "t-ring", hosts: 1, want: "t-ring"},
		{spec: " t-net ", hosts: 1, want: "t-net"},
		{spec: "t-shm,t-net", hosts: 1, want: "t-shm"},
		{spec: "t-shm,t-net", hosts: 2, want: "t-net"},
		{spec: "^t-shm", hosts: 1, want: "t-net"},
		{spec: "t-shm", hosts: 2, err: core.ErrNotSupported, msg: "serves PEs on one host"},
		{spec: "bogus", hosts: 1, err: core.ErrInvalid, msg: `unknown provider "bogus" (known providers: `},
		{spec: "t-shm,bogus", hosts: 1, err: core.ErrInvalid, msg: `"bogus"`},
		{spec: "t-shm,,t-net", hosts: 1, err: core.ErrInvalid, msg: "GOSHMEM_PROVIDER"},
		{spec: "^bogus", hosts: 1, err: core.ErrInvalid, msg: "bogus"},
	} {
		t.Run(fmt.Sprintf("%q/%d", tc.spec, tc.hosts), func(t *testing.T) {
			p, err := core.Select(tc.spec, tc.hosts)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				require.ErrorContains(t, err, tc.msg)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, p.Name())
		})
	}
}

func TestUnknownProviderListsKnown(t *testing.T) {
	registerFakes()
	_, err := core.Lookup("bogus")
	var ue *core.UnknownProviderError
	require.ErrorAs(t, err, &ue)
	require.Equal(t, "bogus", ue.Name)
	require.Contains(t, ue.Known, "t-shm")
	require.Contains(t, err.Error(), "t-net")
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "4096": 4096, "512M": 512 << 20, "2G": 2 << 30, "2g": 2 << 30, "64KiB": 64 << 10,
		"1.5G": 3 << 29, "1T": 1 << 40, " 8 M ": 8 << 20, "100B": 100, "3MB": 3 << 20,
	} {
		got, err := core.ParseSize(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "12Q", "-1", "M", "1.5", "1e3", "G2", "1..2M", "99999999999T", "0x10"} {
		_, err := core.ParseSize(bad)
		require.Error(t, err, bad)
	}
}

func TestParseSizeVarNamesVariableAndForms(t *testing.T) {
	_, err := core.ParseSizeVar("SHMEM_SYMMETRIC_SIZE", "12Q", 0, 1<<40)
	var ee *core.EnvError
	require.ErrorAs(t, err, &ee)
	require.ErrorIs(t, err, core.ErrInvalid)
	require.Contains(t, err.Error(), "SHMEM_SYMMETRIC_SIZE")
	require.Contains(t, err.Error(), "512M")
	require.Contains(t, err.Error(), "2G")
	_, err = core.ParseSizeVar("X", "1K", 4096, 8192)
	require.ErrorContains(t, err, "from 4K to 8K")
}

// A choice is matched in any case and comes back spelled as declared;
// anything else names the variable and every choice; unset is the
// default.
func TestParamChoice(t *testing.T) {
	p := core.NewParam("t", "WAY", "auto", "").WithChoices("auto", "own", "runtime")
	require.Equal(t, core.KindChoice, p.Kind)
	env := func(v string) func(string) (string, bool) {
		return func(string) (string, bool) { return v, v != "" }
	}
	for in, want := range map[string]string{"": "auto", "OWN": "own", " Runtime ": "runtime", "auto": "auto"} {
		got, err := p.Choice(env(in))
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := p.Choice(env("theirs"))
	var ee *core.EnvError
	require.ErrorAs(t, err, &ee)
	require.ErrorIs(t, err, core.ErrInvalid)
	require.Contains(t, err.Error(), "GOSHMEM_T_WAY")
	require.Contains(t, err.Error(), `"auto", "own" or "runtime"`)
	require.Equal(t, `"one"`, core.ChoicesShown([]string{"one"}))
}

func TestConfigParams(t *testing.T) {
	env := map[string]string{"GOSHMEM_T_N": "7", "GOSHMEM_T_BAD": "x", "GOSHMEM_T_D": "250ms"}
	cfg := &core.Config{Env: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	n, err := cfg.Int(core.NewParam("t", "n", "1", ""), 1, 8)
	require.NoError(t, err)
	require.Equal(t, 7, n)
	n, err = cfg.Int(core.NewParam("t", "unset", "3", ""), 1, 8)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	_, err = cfg.Int(core.NewParam("t", "bad", "1", ""), 1, 8)
	require.ErrorContains(t, err, "GOSHMEM_T_BAD")
	require.ErrorContains(t, err, "from 1 to 8")
	d, err := cfg.Duration(core.NewParam("t", "d", "1s", ""))
	require.NoError(t, err)
	require.Equal(t, 250*time.Millisecond, d)
}

// CPUs is the launcher's count when it gave one, else this process's.
func TestConfigCPUs(t *testing.T) {
	env := map[string]string{}
	cfg := &core.Config{Env: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	n, err := cfg.CPUs()
	require.NoError(t, err)
	require.Equal(t, runtime.NumCPU(), n)
	env[core.EnvCPUs] = " 12 "
	n, err = cfg.CPUs()
	require.NoError(t, err)
	require.Equal(t, 12, n)
	for _, bad := range []string{"0", "-2", "two", "1e3"} {
		env[core.EnvCPUs] = bad
		_, err = cfg.CPUs()
		var ee *core.EnvError
		require.ErrorAs(t, err, &ee, bad)
		require.Equal(t, core.EnvCPUs, ee.Var)
		require.ErrorContains(t, err, "from 1 to")
	}
}

func TestCheckRMA(t *testing.T) {
	require.NoError(t, core.CheckRMA(1, 2, 0, 16, 16))
	require.NoError(t, core.CheckRMA(0, 2, 16, 0, 16))
	var pe *core.PEError
	require.ErrorAs(t, core.CheckRMA(2, 2, 0, 1, 16), &pe)
	require.ErrorAs(t, core.CheckRMA(-1, 2, 0, 1, 16), &pe)
	var be *core.BoundsError
	for _, c := range [][2]int{{15, 2}, {17, 0}, {-1, 1}, {0, -1}, {1 << 62, 1 << 62}} {
		require.ErrorAs(t, core.CheckRMA(0, 2, c[0], c[1], 16), &be, "%v", c)
	}
}

func TestCheckAtomic(t *testing.T) {
	full := core.FullAtomics()
	require.NoError(t, core.CheckAtomic(0, 1, 8, 16, core.AtomicAdd, core.Int64, &full))
	var ae *core.AlignError
	require.ErrorAs(t, core.CheckAtomic(0, 1, 4, 16, core.AtomicAdd, core.Int64, &full), &ae)
	require.NoError(t, core.CheckAtomic(0, 1, 4, 16, core.AtomicAdd, core.Int32, &full))
	require.ErrorIs(t, core.CheckAtomic(0, 1, 0, 16, core.AtomicAdd, core.Float64, &full), core.ErrNotSupported)
	require.ErrorIs(t, core.CheckAtomic(0, 1, 0, 16, core.AtomicOp(0), core.Int64, &full), core.ErrInvalid)
	require.ErrorIs(t, core.CheckAtomic(0, 1, 0, 16, core.AtomicAdd, core.AtomicType(42), &full), core.ErrInvalid)
	require.ErrorIs(t, core.CheckAtomic(0, 1, 16, 16, core.AtomicAdd, core.Int32, &full), core.ErrOutOfBounds)
}

func TestErrorsUnwrap(t *testing.T) {
	for err, want := range map[error]error{
		&core.PEError{PE: 5, NPEs: 4}:                        core.ErrInvalid,
		&core.BoundsError{Offset: 1, Len: 2, Size: 2}:        core.ErrOutOfBounds,
		&core.AlignError{Offset: 3, Align: 8}:                core.ErrInvalid,
		&core.PeerLostError{PE: 1}:                           core.ErrPeerLost,
		&core.EnvError{Var: "V"}:                             core.ErrInvalid,
		&core.OpError{Op: "put", PE: 1, Err: core.ErrClosed}: core.ErrClosed,
	} {
		require.ErrorIs(t, err, want, err.Error())
		require.ErrorIs(t, fmt.Errorf("wrapped: %w", err), want)
	}
	require.Equal(t, "PE 5 out of range: the job has PEs 0..3", (&core.PEError{PE: 5, NPEs: 4}).Error())
}

func TestCounterQuiet(t *testing.T) {
	var c core.Counter
	first := c.Issue(3)
	require.Equal(t, uint64(1), first)
	done := make(chan error)
	go func() { done <- c.Quiet(0, nil) }()
	c.Complete(first, 2)
	c.Fail(first+2, errors.New("boom"))
	require.ErrorContains(t, <-done, "boom")
	require.Equal(t, uint64(1), c.Errors())
	require.NoError(t, c.TakeErr(), "the error is reported once")
	require.NoError(t, c.Quiet(0, nil))
}

// Operations issued after a quiet's snapshot that complete first do not
// satisfy it: only the completion of every operation numbered up to the
// snapshot does.
func TestCounterLaterCompletionsDoNotSatisfyEarlierWait(t *testing.T) {
	var c core.Counter
	a := c.Issue(1)
	snap := c.Issued()
	b := c.Issue(1)
	c.Complete(b, 1)
	later := c.Issue(1)
	c.Complete(later, 1)
	require.Equal(t, uint64(2), c.Completed())
	require.Equal(t, uint64(0), c.CompletedUpTo())
	require.ErrorIs(t, c.Wait(snap, 5*time.Millisecond, nil), core.ErrTimeout)
	c.Complete(a, 1)
	require.Equal(t, uint64(3), c.CompletedUpTo(), "the watermark passes what completed ahead")
	require.NoError(t, c.Quiet(time.Second, nil))
}

// Completions in any order, far ahead of the watermark and from many
// goroutines at once, move it exactly to the first operation still in
// flight.
func TestCounterOutOfOrder(t *testing.T) {
	var c core.Counter
	const n = 5000
	first := c.Issue(n)
	// Every operation but the first, last first, in runs of three.
	for s := first + n - 3; s > first; s -= 3 {
		c.Complete(s, min(3, first+n-s))
		require.Equal(t, uint64(0), c.CompletedUpTo())
	}
	if rest := (n - 1) % 3; rest != 0 {
		c.Complete(first+1, uint64(rest))
	}
	require.Equal(t, uint64(0), c.CompletedUpTo())
	c.Complete(first, 1)
	require.Equal(t, uint64(n), c.CompletedUpTo())

	var wg sync.WaitGroup
	const goroutines, each = 8, 2000
	base := c.Issue(goroutines * each)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				c.Complete(base+uint64(i*goroutines+g), 1)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, c.Issued(), c.CompletedUpTo())
	require.Equal(t, c.Issued(), c.Completed())
	c.Complete(base, 1) // completed twice: no harm to the watermark
	require.Equal(t, c.Issued(), c.CompletedUpTo())
}

func TestCounterWaitTimeoutAndAbort(t *testing.T) {
	var c core.Counter
	c.Issue(1)
	require.ErrorIs(t, c.Wait(1, 5*time.Millisecond, nil), core.ErrTimeout)
	lost := &core.PeerLostError{PE: 3}
	require.ErrorIs(t, c.Wait(1, 0, func() error { return lost }), core.ErrPeerLost)
}

func TestCounterManyWaiters(t *testing.T) {
	var c core.Counter
	const waiters = 8
	c.Issue(1)
	var wg sync.WaitGroup
	errs := make(chan error, waiters)
	for range waiters {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- c.Wait(1, time.Minute, nil) }()
	}
	c.Complete(1, 1)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func TestAgreeSingle(t *testing.T) {
	b := single{}
	boom := errors.New("boom")
	require.ErrorIs(t, core.Agree(b, boom), boom)
	require.NoError(t, core.Agree(b, nil))
}

type single struct{}

func (single) Rank() int                            { return 0 }
func (single) Size() int                            { return 1 }
func (single) Allgather(d []byte) ([][]byte, error) { return [][]byte{d}, nil }
func (single) Barrier() error                       { return nil }
func (single) Err() error                           { return nil }
func (single) Close() error                         { return nil }

func BenchmarkCounterCompleteNoWaiters(b *testing.B) {
	b.ReportAllocs()
	var c core.Counter
	for b.Loop() {
		c.Complete(c.Issue(1), 1)
	}
}

func BenchmarkCounterQuietDone(b *testing.B) {
	b.ReportAllocs()
	var c core.Counter
	for b.Loop() {
		c.Complete(c.Issue(1), 1)
		if err := c.Quiet(0, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func TestAgreeCarriesSentinelsAcrossPEs(t *testing.T) {
	boots := bootstrapLocal(3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i, b := range boots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var local error
			if i == 1 {
				local = fmt.Errorf("mapping heap: %w", core.ErrNoMemory)
			}
			errs[i] = core.Agree(b, local)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.ErrorIs(t, err, core.ErrNoMemory, "PE %d", i)
		require.ErrorContains(t, err, "mapping heap")
		if i != 1 {
			var re *core.RemoteError
			require.ErrorAs(t, err, &re)
			require.Equal(t, 1, re.PE)
			require.NotContains(t, err.Error(), "\n")
		}
	}
	for i, b := range boots {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = core.Agree(b, nil) }()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "PE %d: a round with no error agrees on nil", i)
	}
}

func TestEnvErrorForms(t *testing.T) {
	require.Equal(t, `V="x" is malformed: allowed y`, (&core.EnvError{Var: "V", Value: "x", Allowed: "y"}).Error())
	require.Equal(t, `V is not set: it must be y`, (&core.EnvError{Var: "V", Unset: true, Allowed: "y"}).Error())
	got := (&core.EnvError{Var: "V", Value: "deadbeef", Secret: true, Allowed: "y"}).Error()
	require.Equal(t, `V (set, 8 characters, not shown) is malformed: allowed y`, got)
	p := core.Param{Env: "V", Default: "d", Secret: true}
	require.Equal(t, "(set, 8 characters, not shown)", p.Shown("deadbeef", true))
	require.Equal(t, "d (default)", p.Shown("", false))
	require.Equal(t, "v", core.Param{}.Shown("v", true))
}
