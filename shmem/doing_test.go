package shmem_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

// A wait that lasts says so, once, naming what the PEs it waits for are
// doing, and then waits on: PE 0 waits in barrier_all, PE 1 in wait_until
// (for PE 3), PE 2 in a team sync with PE 3, and PE 3 in no routine of
// goshmem's until they have reported. Every wait completes once PE 3 goes
// on.
func TestWaitReport(t *testing.T) {
	var out syncBuffer
	report := func(int) []shmem.Option { return []shmem.Option{shmem.WithWaitReport(300*time.Millisecond, &out)} }
	world(t, 4, nil, report, func(pe int, w *shmem.World, err error) {
		require.NoError(t, err)
		x, err := shmem.Malloc[int64](w, 1)
		require.NoError(t, err)
		pair, err := w.TeamWorld().SplitStrided(2, 1, 2, shmem.TeamConfig{})
		require.NoError(t, err)
		switch pe {
		case 1:
			require.NoError(t, shmem.WaitUntil(w, &x[0], shmem.CmpEQ, 1))
		case 2:
			require.NoError(t, pair.Sync())
		case 3:
			// Asleep, as far as the others can tell, until each has
			// reported its wait.
			require.Eventually(t, func() bool { return strings.Count(out.String(), " has waited ") >= 3 },
				time.Minute, 10*time.Millisecond, "the other PEs report their waits")
			require.NoError(t, shmem.P(w, &x[0], 1, 1))
			require.NoError(t, w.Quiet())
			require.NoError(t, pair.Sync())
		}
		require.NoError(t, w.BarrierAll())
		if pair != nil {
			require.NoError(t, pair.Destroy())
		}
	})
	got := out.String()
	t.Log(got)
	require.Equal(t, 1, strings.Count(got, "PE 0 has waited"), "once per wait")
	first := got[strings.Index(got, "PE 0 has waited"):]
	if end := strings.Index(first, "\ngoshmem:"); end >= 0 {
		first = first[:end+1]
	}
	require.Contains(t, first, "in barrier_all")
	require.Regexp(t, `PE 1 waits in wait_until, for \d`, first)
	require.Regexp(t, `PE 2 waits in team sync, for \d`, first)
	require.Contains(t, first, "PE 3 waits in no goshmem routine")
	require.Contains(t, got, "PE 1 has waited", "a wait for any PE is reported too")
	require.Contains(t, got, "PE 2 has waited")
	require.NotContains(t, got, "PE 3 has waited", "PE 3 never waited that long")
}

// GOSHMEM_WAIT_REPORT=0 turns the report off, and a value that is no
// duration is refused, naming the variable.
func TestWaitReportSetting(t *testing.T) {
	world(t, 1, map[string]string{shmem.EnvWaitReport: "soon"}, nil, func(pe int, w *shmem.World, err error) {
		require.ErrorContains(t, err, shmem.EnvWaitReport+`="soon"`)
	})
	world(t, 1, map[string]string{shmem.EnvWaitReport: "0"}, nil, func(pe int, w *shmem.World, err error) {
		require.NoError(t, err)
	})
}
