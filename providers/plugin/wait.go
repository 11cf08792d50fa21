package plugin

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/goshmem/goshmem/core"
	pb "github.com/goshmem/goshmem/providers/plugin/proto"
)

// The wrapped provider's core.LocalWaiter, when it has one, is served
// too: a PE's wait for a change to its own memory happens in the plugin
// process, where the provider's wake-ups arrive (loopback's futex words
// live in files the PE does not map). Each call is one round trip; that
// is slower than a wait in process but much faster than polling with
// back-off, which is what shmem does without a LocalWaiter.

// maxWait bounds one WaitChange in the plugin, whatever the host asks.
const maxWait = time.Second

// waiter returns the open domain as a core.LocalWaiter.
func (s *server) waiter() (core.LocalWaiter, error) {
	d, err := s.domain()
	if err != nil {
		return nil, err
	}
	w, ok := d.(core.LocalWaiter)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "the provider cannot wait for local changes")
	}
	return w, nil
}

func (s *server) WaitArm(_ context.Context, req *pb.WaitArmRequest) (*pb.WaitArmReply, error) {
	w, err := s.waiter()
	if err != nil {
		return nil, err
	}
	var r core.Region
	if !req.Any {
		if r, err = s.region(req.Region); err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
	}
	seq, watch := w.WaitArm(r, int(req.Off), int(req.Len))
	return &pb.WaitArmReply{Seq: seq, Watch: int32(watch)}, nil
}

func (s *server) WaitChange(_ context.Context, req *pb.WaitChangeRequest) (*pb.WaitChangeReply, error) {
	w, err := s.waiter()
	if err != nil {
		return nil, err
	}
	return &pb.WaitChangeReply{Seq: w.WaitChange(req.Seq, min(time.Duration(req.MaxNs), maxWait))}, nil
}

func (s *server) WaitDisarm(_ context.Context, req *pb.WaitDisarmRequest) (*pb.WaitDisarmReply, error) {
	w, err := s.waiter()
	if err != nil {
		return nil, err
	}
	w.WaitDisarm(int(req.Watch))
	return &pb.WaitDisarmReply{}, nil
}

// waitingDomain is a plugin domain whose wrapped domain waits for local
// changes: it implements core.LocalWaiter by asking the plugin. The
// interface has no errors: a plugin that fails is recorded as broken (the
// next endpoint or domain call reports it), arming yields no watch, and a
// wait sleeps its max and returns, as a wait nobody wakes does.
type waitingDomain struct{ *domain }

var _ core.LocalWaiter = waitingDomain{}

// waitCall runs one wait call, bounded by extra plus the plugin's timeout.
func (w waitingDomain) waitCall(op string, extra time.Duration, f func(ctx context.Context) error) bool {
	if w.closed.Load() || w.broken.Load() != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), extra+w.set.timeout)
	defer cancel()
	if err := f(ctx); err != nil {
		err = w.fail(op, err)
		w.broken.CompareAndSwap(nil, &err)
		return false
	}
	return true
}

func (w waitingDomain) WaitArm(r core.Region, off, n int) (uint32, int) {
	req := &pb.WaitArmRequest{Any: true}
	if reg, ok := r.(*region); ok && reg.dom == w.domain && n > 0 {
		req = &pb.WaitArmRequest{Region: reg.id, Off: int64(off), Len: int64(n)}
	}
	var rep *pb.WaitArmReply
	ok := w.waitCall("wait-arm", 0, func(ctx context.Context) (err error) {
		rep, err = w.proc.rpc.WaitArm(ctx, req)
		return err
	})
	if !ok {
		return 0, -1
	}
	return rep.Seq, int(rep.Watch)
}

func (w waitingDomain) WaitChange(seq uint32, max time.Duration) uint32 {
	var rep *pb.WaitChangeReply
	ok := w.waitCall("wait", max, func(ctx context.Context) (err error) {
		rep, err = w.proc.rpc.WaitChange(ctx, &pb.WaitChangeRequest{Seq: seq, MaxNs: int64(max)})
		return err
	})
	if !ok {
		time.Sleep(max)
		return seq
	}
	return rep.Seq
}

func (w waitingDomain) WaitDisarm(watch int) {
	w.waitCall("wait-disarm", 0, func(ctx context.Context) error {
		_, err := w.proc.rpc.WaitDisarm(ctx, &pb.WaitDisarmRequest{Watch: int32(watch)})
		return err
	})
}
