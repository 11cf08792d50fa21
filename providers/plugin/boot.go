package plugin

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/goshmem/goshmem/core"
	pb "github.com/goshmem/goshmem/providers/plugin/proto"
)

// proxyBoot is the job's bootstrap as the wrapped provider sees it inside
// the plugin process: every collective is a call on the session stream,
// which the host answers with its own bootstrap. Calls are serialized, as
// collectives are. before, if set, runs ahead of every collective (the
// region capture uses it).
type proxyBoot struct {
	rank, size int
	before     func()

	mu     sync.Mutex
	stream pb.Provider_SessionServer
	err    atomic.Pointer[error] // set once the session breaks
}

var _ core.Bootstrap = (*proxyBoot)(nil)

func (b *proxyBoot) Rank() int { return b.rank }
func (b *proxyBoot) Size() int { return b.size }

func (b *proxyBoot) Allgather(data []byte) ([][]byte, error) {
	return b.call(&pb.BootCall{Kind: pb.BootCall_ALLGATHER, Data: data})
}

func (b *proxyBoot) Barrier() error {
	_, err := b.call(&pb.BootCall{Kind: pb.BootCall_BARRIER})
	return err
}

// Err implements core.Bootstrap: nil until the session with the host broke.
func (b *proxyBoot) Err() error {
	if p := b.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Close implements core.Bootstrap. The bootstrap is the host's; the
// provider's Close of it does nothing.
func (b *proxyBoot) Close() error { return nil }

// send sends m on the session stream under the lock.
func (b *proxyBoot) send(m *pb.PluginMsg) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stream.Send(m)
}

func (b *proxyBoot) call(c *pb.BootCall) ([][]byte, error) {
	if err := b.Err(); err != nil {
		return nil, err
	}
	if b.before != nil {
		b.before()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.stream.Send(&pb.PluginMsg{Msg: &pb.PluginMsg_Boot{Boot: c}}); err != nil {
		return nil, b.lost(err)
	}
	m, err := b.stream.Recv()
	if err != nil {
		return nil, b.lost(err)
	}
	r := m.GetBoot()
	if r == nil {
		return nil, b.lost(fmt.Errorf("the host sent %T instead of a bootstrap reply", m.Msg))
	}
	rerr, derr := decodeErr(r.Err)
	if derr != nil {
		return nil, b.lost(fmt.Errorf("the host sent a malformed bootstrap reply: %v", derr))
	}
	if rerr != nil {
		return nil, rerr
	}
	if c.Kind == pb.BootCall_ALLGATHER && len(r.Data) != b.size {
		return nil, b.lost(fmt.Errorf("the host sent %d contributions for a job of %d", len(r.Data), b.size))
	}
	return r.Data, nil
}

// lost records that the session broke: the PE is gone or confused, and
// every later collective fails at once.
func (b *proxyBoot) lost(err error) error {
	var e error = &core.PeerLostError{PE: -1, Reason: "the PE's session with its plugin ended: " + err.Error()}
	b.err.CompareAndSwap(nil, &e)
	return *b.err.Load()
}
