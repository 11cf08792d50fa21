package hybrid

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
)

// groups returns, for a job of the given hosts' sizes, each PE's group
// over the in-process bootstrap.
func groups(sizes ...int) ([]*bootstrap.Local, []*group) {
	n := 0
	for _, s := range sizes {
		n += s
	}
	boots := bootstrap.NewLocal(n)
	gs := make([]*group, n)
	pe := 0
	for _, s := range sizes {
		members := make([]int, s)
		for i := range members {
			members[i] = pe + i
		}
		for i := range members {
			gs[pe+i] = &group{parent: boots[pe+i], members: members, rank: i}
		}
		pe += s
	}
	return boots, gs
}

// Each host's group sees its own members' parts only, numbered from 0.
func TestGroupAllgather(t *testing.T) {
	_, gs := groups(2, 1, 3)
	got := make([][][]byte, len(gs))
	var wg sync.WaitGroup
	for pe, g := range gs {
		wg.Go(func() {
			all, err := g.Allgather([]byte{byte(pe)})
			require.NoError(t, err)
			got[pe] = all
		})
	}
	wg.Wait()
	require.Equal(t, [][]byte{{0}, {1}}, got[0])
	require.Equal(t, [][]byte{{2}}, got[2])
	require.Equal(t, [][]byte{{3}, {4}, {5}}, got[5])
}

// A host whose step fails after one collective, while the other's step
// runs three: every PE gets an error from the agreement, nobody waits for
// a round that never comes, and the job's bootstrap is in step after.
func TestGroupStepFailsOnOneHost(t *testing.T) {
	boots, gs := groups(2, 2)
	errs := make([]error, len(gs))
	after := make([][][]byte, len(gs))
	var wg sync.WaitGroup
	for pe, g := range gs {
		wg.Go(func() {
			var err error
			rounds := 3
			if pe < 2 {
				rounds = 1
			}
			for range rounds {
				if _, err = g.Allgather([]byte("step")); err != nil {
					break
				}
			}
			if err == nil && pe < 2 {
				err = errors.New("out of shared memory")
			}
			errs[pe] = agree(boots[pe], err)
			// The same round for everybody: a plain collective works.
			after[pe], _ = boots[pe].Allgather([]byte{byte(pe)})
		})
	}
	wg.Wait()
	for pe, err := range errs {
		require.Error(t, err, "PE %d", pe)
		require.Contains(t, err.Error(), "out of shared memory", "PE %d", pe)
		require.Equal(t, [][]byte{{0}, {1}, {2}, {3}}, after[pe], "PE %d", pe)
	}
	// A broken group fails at once, without a round of the job.
	_, err := gs[3].Allgather(nil)
	require.Error(t, err)
}

// The agreement of a step that succeeded everywhere is nil everywhere.
func TestGroupStepSucceeds(t *testing.T) {
	boots, gs := groups(1, 3)
	var wg sync.WaitGroup
	for pe, g := range gs {
		wg.Go(func() {
			_, err := g.Allgather([]byte("x"))
			require.NoError(t, agree(boots[pe], err))
			require.NoError(t, g.Barrier())
		})
	}
	wg.Wait()
}

func TestHostMapDescribe(t *testing.T) {
	require.Equal(t, "0-3,6,8-9", peRange([]int{0, 1, 2, 3, 6, 8, 9}))
	m := core.NewHostMap([]string{"a", "b", "a", "c", "b"})
	require.Equal(t, []int{0, 1, 0, 2, 1}, m.Host)
	require.Equal(t, [][]int{{0, 2}, {1, 4}, {3}}, m.PEs)
	require.True(t, m.Shared())
	require.False(t, core.NewHostMap([]string{"a", "b"}).Shared())
}

// The parts of a round come from other processes: any bytes decode to a
// result or an error, never a panic, and a result keeps the members'
// parts without their tag.
func FuzzRoundParts(f *testing.F) {
	f.Add([]byte{tagGroup, 1, tagGroup}, []byte{tagGroup}, uint8(0))
	f.Add([]byte{tagAgree}, []byte{tagAgree, 9}, uint8(1))
	f.Add([]byte{}, []byte{tagGroup}, uint8(1))
	f.Fuzz(func(t *testing.T, a, b []byte, member uint8) {
		all := [][]byte{a, b}
		m := int(member % 3) // 2 names no PE of the job
		if out, err := groupParts(all, []int{m}); err == nil {
			require.Equal(t, all[m][1:], out[0])
		}
		if out, ok := agreeParts(all); ok {
			require.Equal(t, a[1:], out[0])
			require.Equal(t, b[1:], out[1])
		}
	})
}
