package plugin

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/goshmem/goshmem/core"
	pb "github.com/goshmem/goshmem/providers/plugin/proto"
)

// checkedEndpoint is a core.Endpoint that fails the test if the executor
// hands it a buffer outside the staging area.
type checkedEndpoint struct {
	core.Endpoint // nil: calls the executor must not make panic
	t             *testing.T
	stage         []byte
}

// inStage checks that b is stage[s:s+len(b)] for some s: a slice of the
// staging area has the area's end as its capacity's end.
func (e checkedEndpoint) inStage(b []byte) {
	s := len(e.stage) - cap(b)
	if len(b) > 0 && (s < 0 || &b[0] != &e.stage[s]) {
		e.t.Fatalf("buffer of %d bytes is not a part of the staging area", len(b))
	}
}

func (e checkedEndpoint) Put(pe int, r core.Region, off int, src []byte) error {
	e.inStage(src)
	return nil
}

func (e checkedEndpoint) Get(pe int, r core.Region, off int, dst []byte) error {
	e.inStage(dst)
	return nil
}

func (checkedEndpoint) PutValue(int, core.Region, int, uint64, int) error   { return nil }
func (checkedEndpoint) GetValue(int, core.Region, int, int) (uint64, error) { return 0, nil }
func (checkedEndpoint) Fence() error                                        { return nil }
func (checkedEndpoint) Quiet() error                                        { return nil }
func (checkedEndpoint) Atomic(int, core.Region, int, core.AtomicOp, core.AtomicType, uint64) error {
	return nil
}
func (checkedEndpoint) FetchAtomic(int, core.Region, int, core.AtomicOp, core.AtomicType, uint64, uint64) (uint64, error) {
	return 0, nil
}

type fakeRegion []byte

func (r fakeRegion) Local() []byte { return r }

// FuzzExecutor feeds the plugin's executor arbitrary operations from the
// host: whatever they say, it must not panic nor hand the provider memory
// outside the staging area.
func FuzzExecutor(f *testing.F) {
	for _, op := range []*pb.Op{
		{Kind: pb.Op_PUT, Region: 0, Off: 8, Len: 16, Stage: 32},
		{Kind: pb.Op_GET, Region: 0, Len: 64, Stage: 0},
		{Kind: pb.Op_FETCH_ATOMIC, Off: 8, AtomicOp: uint32(core.AtomicAdd), AtomicType: uint32(core.Uint64), Value: 1},
		{Kind: pb.Op_QUIET},
	} {
		b, _ := proto.Marshal(op)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var op pb.Op
		if proto.Unmarshal(b, &op) != nil {
			return
		}
		stage := make([]byte, 64)
		x := executor{s: &server{regions: []core.Region{fakeRegion(make([]byte, 128))}},
			ep: checkedEndpoint{t: t, stage: stage}, stage: stage}
		x.do(&op)
	})
}
