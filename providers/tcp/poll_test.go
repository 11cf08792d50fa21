package tcp

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// The budget grows while polls succeed, halves to zero while they fail,
// grows again from zero only when a sleep was short, and never passes
// the limit.
func TestPollBudgetAdapts(t *testing.T) {
	const limit = int64(50 * time.Microsecond)
	var b int64
	p := poll{budget: &b, start: nanotime(), limit: limit}

	p.slept() // slept briefly with a zero budget: poll next time
	require.Positive(t, b)
	require.LessOrEqual(t, b, limit)

	for range 20 {
		p.start = nanotime()
		p.hit()
	}
	require.Equal(t, limit, b, "hits double the budget up to the limit")

	p.miss()
	require.Equal(t, limit/2, b)
	for range 10 {
		p.miss()
	}
	require.Zero(t, b, "misses halve the budget to zero")

	p.start = nanotime() - limit // slept long: the budget stays zero
	p.slept()
	require.Zero(t, b)

	off := poll{budget: &b, start: nanotime()} // POLL=0: nothing ever grows
	off.slept()
	require.Zero(t, b)
}

// A domain polls only with POLL above zero and the host's CPUs free: a
// poll started without either has no budget.
func TestPollStartNeedsALimit(t *testing.T) {
	b := int64(time.Millisecond)
	d := &domain{}
	p := startPoll(d, &b)
	require.False(t, p.on(), "POLL=0")
	d.pollMax.Store(int64(20 * time.Microsecond))
	p = startPoll(d, &b)
	if p.on() {
		require.LessOrEqual(t, p.until-p.start, int64(20*time.Microsecond), "capped by POLL")
	}
}

// With one runtime processor per PE and two PEs on this host, readers
// poll without the CPU pressure gate: every kind of frame still arrives
// whole and in order through the non-blocking reads, and a peer that dies
// while PE 0 polls is lost, not waited for.
func TestPollingCarriesEveryFrame(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("two PEs poll only on a host with two CPUs")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	doms, _ := openJob(t, 2, map[string]string{paramPoll.Env: "1ms"})
	for _, d := range doms {
		require.Equal(t, int64(time.Millisecond), d.pollMax.Load(), "PE %d does not poll", d.rank)
		require.False(t, d.pollGated, "PE %d", d.rank)
	}
	const size = 4 << 20
	regs := newRegions(t, doms, size)
	ep := newEndpoint(t, doms[0])

	const puts = 2000
	for i := range puts {
		require.NoError(t, ep.PutValue(1, regs[0], (i%64)*8, uint64(i), 8))
		if i%7 == 0 {
			require.NoError(t, ep.Quiet())
		}
		if i%5 == 0 {
			old, err := ep.FetchAtomic(1, regs[0], 1024, core.AtomicAdd, core.Uint64, 1, 0)
			require.NoError(t, err)
			require.Equal(t, uint64(i/5), old)
		}
	}
	require.NoError(t, ep.Quiet())
	for w := range 64 {
		v, err := ep.GetValue(1, regs[0], w*8, 8)
		require.NoError(t, err)
		require.Equal(t, uint64(puts-1-(puts-1-w)%64), v, "the last put to word %d", w)
	}

	big := make([]byte, size)
	for i := range big {
		big[i] = byte(i * 7)
	}
	require.NoError(t, ep.Put(1, regs[0], 0, big))
	require.NoError(t, ep.Quiet())
	back := make([]byte, size)
	require.NoError(t, ep.Get(1, regs[0], 0, back))
	require.Equal(t, big, back)

	die(doms[1])
	_, err := ep.GetValue(1, regs[0], 0, 8)
	var lost *core.PeerLostError
	require.ErrorAs(t, err, &lost)
	require.Equal(t, 1, lost.PE)
}

// A poll learns how long its waits usually take, from the first one on,
// and counts what it waits for as due by twice that: until then a poll
// where the host's CPUs have room does not yield.
func TestPollLearnsWhenDue(t *testing.T) {
	var usual int64
	learn(&usual, 8000)
	require.Equal(t, int64(8000), usual, "the first wait is the usual one")
	for range 100 {
		learn(&usual, 16000)
	}
	require.InDelta(t, 16000, usual, 100, "the average follows the waits")
	learn(&usual, 1_000_000)
	require.Less(t, usual, int64(150_000), "one late wait moves it an eighth of the way")

	p := poll{start: 1000, due: 1000}
	p.expect(5000)
	require.Equal(t, int64(11000), p.due)
	p.expect(0)
	require.Equal(t, p.start, p.due, "nothing learnt: due at once, yielding as before")

	gated := poll{start: 1000, due: 1000, gated: true}
	gated.expect(5000)
	require.Equal(t, gated.start, gated.due, "more processors than CPUs: due at once")
}

// POLL_STALL at 100 holds the CPU-room gate open and at 0 closed,
// whatever the kernel reports.
func TestPollStallHoldsTheGate(t *testing.T) {
	defer roomStall.Store(roomStall.Load())
	roomStall.Store(100)
	require.True(t, cpuRoom(nanotime()), "POLL_STALL=100")
	roomStall.Store(0)
	require.False(t, cpuRoom(nanotime()), "POLL_STALL=0")
}

// A poll yields at every look until its yields have shown its CPU to be
// its own, and again once something took the CPU between two looks: two
// pollers woken onto one CPU then let each other run until the kernel
// gives each a CPU.
func TestPollYieldsUntilItsCPUIsItsOwn(t *testing.T) {
	defer roomStall.Store(roomStall.Load())
	roomStall.Store(100) // the host's CPUs have room

	now := nanotime()
	alone := int32(aloneYields)
	// looked in the future: however long this test waits for its CPU
	// here, no gap between looks is seen.
	p := poll{start: now, until: now + int64(time.Hour), due: now + int64(time.Hour), yielded: now, looked: now + int64(time.Hour)}
	p.share(&alone)
	require.True(t, p.next())
	require.Equal(t, now, p.yielded, "alone on its CPU, not due: no yield")
	require.Equal(t, int32(aloneYields), alone)

	p.looked = nanotime() - 2*lookGap // something ran on its CPU meanwhile
	before := p.yielded
	require.True(t, p.next())
	require.Greater(t, p.yielded, before, "its CPU was taken: it yields")
	require.Less(t, alone, int32(aloneYields), "and counts its yields again")

	alone = 0
	before = p.yielded
	require.True(t, p.next())
	require.Greater(t, p.yielded, before, "not yet shown alone: it yields")

	free := poll{start: now, until: now + int64(time.Hour), due: now + int64(time.Hour), yielded: now, looked: now}
	require.True(t, free.next())
	require.Equal(t, now, free.yielded, "a poll that counts nothing yields as before")
}
