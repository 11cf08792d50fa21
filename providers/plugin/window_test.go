package plugin

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	pb "github.com/goshmem/goshmem/providers/plugin/proto"
)

// TestWindowFitsStream checks the bound the flow control rests on: a full
// window of the largest operation the host can send after the stream's
// opening (every field at its widest encoding), with gRPC's 5-byte
// message prefix and an HTTP/2 frame header each, fits in the 64 KiB a
// stream holds before its sender blocks. A field added to Op that breaks
// this must shrink the window.
func TestWindowFitsStream(t *testing.T) {
	widest := &pb.Op{Kind: pb.Op_QUIET, Pe: math.MinInt32, Region: math.MaxUint32,
		Off: math.MinInt64, Len: math.MinInt64, Stage: math.MinInt64,
		Value: math.MaxUint64, Compare: math.MaxUint64,
		AtomicOp: math.MaxUint32, AtomicType: math.MaxUint32}
	const grpcPrefix, frameHeader = 5, 9
	perOp := proto.Size(widest) + grpcPrefix + frameHeader
	require.Less(t, perOp, 128, "the window's comment promises under 128 bytes an operation")
	require.LessOrEqual(t, window*perOp, 64<<10, "a full window of %d-byte operations", perOp)
}

// TestQueue checks the pending queue against a slice through many wraps.
func TestQueue(t *testing.T) {
	var q queue
	var model []pending
	next := 0
	for round := range 10 * window {
		// Fill to a level that varies by round, then drain to another.
		fill, drain := round%(window+1), (round*7)%(window+1)
		for q.n < fill {
			p := pending{kind: pb.Op_PUT, pe: next, end: -1}
			next++
			q.push(p)
			model = append(model, p)
		}
		for q.n > drain {
			require.Equal(t, model[0], q.front(), "round %d", round)
			q.pop()
			model = model[1:]
		}
		require.Len(t, model, q.n)
	}
}
