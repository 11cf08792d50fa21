package tcp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
