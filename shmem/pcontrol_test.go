package shmem_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

// syncBuffer is a log sink the PEs' goroutines share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// PControl records the level, logs changes at debug level only, and
// leaves results alone.
func TestPControl(t *testing.T) {
	var out syncBuffer
	log := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	world(t, 2, nil, func(int) []shmem.Option { return []shmem.Option{shmem.WithLogger(log)} },
		func(pe int, w *shmem.World, err error) {
			require.NoError(t, err)
			require.Equal(t, shmem.PControlDefault, w.PControlLevel())
			w.PControl(shmem.PControlDefault) // no change, no message
			w.PControl(shmem.PControlDetail)
			require.Equal(t, shmem.PControlDetail, w.PControlLevel())
			require.NoError(t, w.BarrierAll())
			var sum [1]int64
			require.NoError(t, shmem.SumReduce(w.TeamWorld(), sum[:], []int64{1}))
			require.Equal(t, int64(2), sum[0])
			w.PControl(shmem.PControlOff)
			w.PControl(-7) // levels past the spec's are the tools' business
			require.Equal(t, -7, w.PControlLevel())
			w.PControl(shmem.PControlOff)
			require.Equal(t, shmem.PControlOff, w.PControlLevel())
		})
	got := strings.Count(out.String(), "msg=pcontrol")
	require.Equal(t, 2*4, got, "one message per change on each PE:\n%s", out.String())
	require.Contains(t, out.String(), "level=2 was=1")
}
