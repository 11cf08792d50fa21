package core_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// calls is an endpoint that records the operations it is asked for; the
// ones a put-with-signal takes are all it implements, and its PutSignal
// is PutFenceSignal, as a provider's without CapPutSignal is.
type calls struct {
	core.Endpoint
	log []string
}

func (c *calls) PutSignal(pe int, r core.Region, off int, src []byte, sigR core.Region, sigOff int, op core.AtomicOp, v uint64) error {
	return core.PutFenceSignal(c, pe, r, off, src, sigR, sigOff, op, v)
}

func (c *calls) Put(pe int, _ core.Region, off int, src []byte) error {
	c.log = append(c.log, fmt.Sprintf("put %d@%d to %d", len(src), off, pe))
	return nil
}

func (c *calls) Fence() error {
	c.log = append(c.log, "fence")
	return nil
}

func (c *calls) Atomic(pe int, _ core.Region, off int, op core.AtomicOp, t core.AtomicType, v uint64) error {
	c.log = append(c.log, fmt.Sprintf("%s %s %d@%d to %d", op, t, v, off, pe))
	return nil
}

// joined carries a put-with-signal as one operation.
type joined struct{ calls }

func (j *joined) PutSignal(pe int, _ core.Region, off int, src []byte, _ core.Region, sigOff int, op core.AtomicOp, v uint64) error {
	j.log = append(j.log, fmt.Sprintf("put-signal %d@%d %s %d@%d to %d", len(src), off, op, v, sigOff, pe))
	return nil
}

// TestPutSignal: PutFenceSignal is Put, Fence and Atomic in turn, the
// signal alone for no data, and a bad signal refused before anything is
// put.
func TestPutSignal(t *testing.T) {
	var c calls
	require.NoError(t, c.PutSignal(1, nil, 64, make([]byte, 8), nil, 0, core.AtomicWrite, 5))
	require.NoError(t, c.PutSignal(2, nil, 64, nil, nil, 8, core.AtomicAdd, 1))
	require.Equal(t, []string{"put 8@64 to 1", "fence", "write uint64 5@0 to 1", "add uint64 1@8 to 2"}, c.log)

	var j joined
	require.NoError(t, j.PutSignal(1, nil, 64, make([]byte, 8), nil, 0, core.AtomicWrite, 5))
	require.Equal(t, []string{"put-signal 8@64 write 5@0 to 1"}, j.log)

	c.log = nil
	var ale *core.AlignError
	require.ErrorAs(t, c.PutSignal(1, nil, 64, make([]byte, 8), nil, 4, core.AtomicWrite, 5), &ale)
	for _, op := range []core.AtomicOp{core.AtomicRead, core.AtomicSwap, core.AtomicCSwap, core.AtomicOp(0), core.AtomicOp(42)} {
		err := c.PutSignal(1, nil, 64, make([]byte, 8), nil, 0, op, 5)
		require.ErrorIs(t, err, core.ErrInvalid, "signal by %s", op)
		require.ErrorContains(t, err, "put-signal PE 1")
	}
	require.Empty(t, c.log, "a refused signal put nothing")
	for _, op := range []core.AtomicOp{core.AtomicWrite, core.AtomicAdd, core.AtomicAnd, core.AtomicOr, core.AtomicXor} {
		require.NoError(t, core.CheckSignal(16, op))
	}
}
