package shmem

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// recorder is a provider's endpoint that records what reaches it.
type recorder struct {
	core.Endpoint
	log []string
}

func (r *recorder) PutSignal(pe int, _ core.Region, off int, src []byte, _ core.Region, sigOff int, op core.AtomicOp, v uint64) error {
	r.log = append(r.log, fmt.Sprintf("put-signal %d@%d %s %d@%d to %d", len(src), off, op, v, sigOff, pe))
	return nil
}

func (r *recorder) Put(pe int, _ core.Region, off int, src []byte) error {
	r.log = append(r.log, fmt.Sprintf("put %d@%d to %d", len(src), off, pe))
	return nil
}

// A team context's put-with-signal reaches the provider's own PutSignal,
// one operation where the provider has CapPutSignal, with the team rank
// translated: wrapped by the team's endpoint, it used to fall back to a
// put, a fence and an atomic. A NoStore context refuses it, as it refuses
// every store.
func TestTeamContextKeepsPutSignal(t *testing.T) {
	rec := &recorder{}
	team := &Team{members: []int{4, 7, 9}}
	ep := &teamEndpoint{ep: rec, t: team}
	require.NoError(t, ep.PutSignal(1, nil, 64, make([]byte, 8), nil, 0, core.AtomicAdd, 1))
	require.Equal(t, []string{"put-signal 8@64 add 1@0 to 7"}, rec.log)
	require.ErrorIs(t, ep.PutSignal(3, nil, 64, nil, nil, 0, core.AtomicAdd, 1), core.ErrInvalid, "rank past the team")

	rec.log = nil
	ns := noStoreEndpoint{ep: ep}
	require.ErrorIs(t, ns.PutSignal(1, nil, 64, make([]byte, 8), nil, 0, core.AtomicAdd, 1), core.ErrInvalid)
	require.ErrorContains(t, ns.PutSignal(1, nil, 64, nil, nil, 0, core.AtomicAdd, 1), "NoStore")
	require.Empty(t, rec.log, "nothing reached the provider")
}

// peQuietRecorder is a recorder whose provider quiets PEs one by one.
type peQuietRecorder struct{ recorder }

func (r *peQuietRecorder) QuietPEs(pes []int) error {
	r.log = append(r.log, fmt.Sprintf("quiet PEs %v", pes))
	return nil
}

func (r *peQuietRecorder) Quiet() error {
	r.log = append(r.log, "quiet")
	return nil
}

// A team context's and a NoStore context's per-PE quiet reach the
// provider's QuietPEs (core.PEQuieter), the team ranks translated, so a
// slow PE outside the list holds them up no more than the provider's
// own; a provider without one quiets everything.
func TestContextsKeepPEQuiet(t *testing.T) {
	rec := &peQuietRecorder{}
	team := &Team{members: []int{4, 7, 9}}
	ep := &teamEndpoint{ep: rec, t: team}
	require.NoError(t, ep.QuietPEs([]int{2, 0}))
	require.NoError(t, noStoreEndpoint{ep: ep}.QuietPEs([]int{1}))
	require.Equal(t, []string{"quiet PEs [9 4]", "quiet PEs [7]"}, rec.log)
	require.ErrorIs(t, ep.QuietPEs([]int{3}), core.ErrInvalid, "rank past the team")
	require.Len(t, rec.log, 2, "nothing reached the provider")

	plain := &recorder{}
	require.NoError(t, core.QuietPEs(&teamEndpoint{ep: &quietCounter{recorder: plain}, t: team}, []int{1}))
	require.Equal(t, []string{"quiet"}, plain.log)
}

// quietCounter is a recorder with a Quiet and no QuietPEs.
type quietCounter struct{ *recorder }

func (q *quietCounter) Quiet() error {
	q.log = append(q.log, "quiet")
	return nil
}
