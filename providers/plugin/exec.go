package plugin

import (
	"fmt"

	"github.com/goshmem/goshmem/core"
	pb "github.com/goshmem/goshmem/providers/plugin/proto"
)

// executor runs a host's operations on a wrapped endpoint. It trusts
// nothing in an Op: the region must exist and the staging extent must lie
// inside the staging area; PE, bounds and atomic checks are the wrapped
// provider's, as for any caller.
type executor struct {
	s     *server
	ep    core.Endpoint
	stage []byte
}

// staged returns the extent of the staging area an Op names.
func (x *executor) staged(op *pb.Op) ([]byte, error) {
	if op.Len < 0 || op.Stage < 0 || op.Stage > int64(len(x.stage)) || op.Len > int64(len(x.stage))-op.Stage {
		return nil, fmt.Errorf("staging extent of %d bytes at %d outside the staging area of %d: %w",
			op.Len, op.Stage, len(x.stage), core.ErrOutOfBounds)
	}
	return x.stage[op.Stage : op.Stage+op.Len], nil
}

// do executes one Op and returns its value (for GET_VALUE and
// FETCH_ATOMIC) and error.
func (x *executor) do(op *pb.Op) (uint64, error) {
	switch op.Kind {
	case pb.Op_FENCE:
		return 0, x.ep.Fence()
	case pb.Op_QUIET:
		return 0, x.ep.Quiet()
	}
	r, err := x.s.region(op.Region)
	if err != nil {
		return 0, err
	}
	pe, off := int(op.Pe), int(op.Off)
	if int64(off) != op.Off || op.AtomicOp > 0xff || op.AtomicType > 0xff {
		return 0, fmt.Errorf("offset %d, atomic operation %d, type %d: %w", op.Off, op.AtomicOp, op.AtomicType, core.ErrInvalid)
	}
	switch op.Kind {
	case pb.Op_PUT, pb.Op_GET:
		b, err := x.staged(op)
		if err != nil {
			return 0, err
		}
		if op.Kind == pb.Op_PUT {
			return 0, x.ep.Put(pe, r, off, b)
		}
		return 0, x.ep.Get(pe, r, off, b)
	case pb.Op_PUT_VALUE:
		return 0, x.ep.PutValue(pe, r, off, op.Value, int(op.Len))
	case pb.Op_GET_VALUE:
		return x.ep.GetValue(pe, r, off, int(op.Len))
	case pb.Op_ATOMIC:
		return 0, x.ep.Atomic(pe, r, off, core.AtomicOp(op.AtomicOp), core.AtomicType(op.AtomicType), op.Value)
	case pb.Op_FETCH_ATOMIC:
		return x.ep.FetchAtomic(pe, r, off, core.AtomicOp(op.AtomicOp), core.AtomicType(op.AtomicType), op.Value, op.Compare)
	}
	return 0, fmt.Errorf("operation kind %v: %w", op.Kind, core.ErrInvalid)
}
