package sim

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/ntb"
)

// dmaChan is one DMA channel: it performs its descriptors in order, each
// after its set-up, its bytes crossing the port's outbound wire (shared
// with the port's other channels and with relayed traffic) and the
// flight of the last write.
type dmaChan struct {
	p   *Port
	c   int
	rng *rand.Rand // SetupJitter's draws, in the channel's own order

	mu      sync.Mutex
	queue   []dmaDesc
	err     error // the first failure since the last Wait
	stopped bool
	work    chan struct{}
	done    chan struct{} // closed when the goroutine ends
}

type dmaDesc struct {
	dst, src []byte
	done     func(error)
	remote   bool   // dst is the peer's: the bytes cross the link
	epoch    uint64 // the link's, at submission
	marker   chan struct{}
}

func newDMAChan(p *Port, c int) *dmaChan {
	seed := p.f.cfg.Seed
	id := uint64(p.l.k)*4 + uint64(p.end)*2 + uint64(c)*1<<32
	d := &dmaChan{p: p, c: c, rng: rand.New(rand.NewPCG(seed, id)), work: make(chan struct{}, 1), done: make(chan struct{})}
	go d.run()
	return d
}

// within reports whether b lies inside w.
func within(b, w []byte) bool {
	if len(b) == 0 || len(w) == 0 {
		return false
	}
	lo, hi := mem.Addr(w), mem.Addr(w)+uintptr(len(w))
	a := mem.Addr(b)
	return a >= lo && a+uintptr(len(b)) <= hi
}

// Submit queues a copy of src into dst.
func (d *dmaChan) Submit(dst, src []byte, done func(error)) error {
	p := d.p
	if len(dst) < len(src) {
		return p.errorf(ntb.ErrRange, "DMA of %d bytes into %d", len(src), len(dst))
	}
	dst = dst[:len(src)]
	p.l.mu.Lock()
	closed, up, epoch := p.closed, p.l.up, p.l.epoch
	remote, local := false, false
	if len(src) > 0 {
		for _, w := range p.peer().inbound {
			remote = remote || within(dst, w)
		}
		for _, w := range p.inbound {
			local = local || within(src, w)
		}
	}
	p.l.mu.Unlock()
	switch {
	case closed:
		return p.errorf(ntb.ErrClosed, "DMA submit")
	case !up && !local:
		// A down reset the peer's translations: dst is in no window now.
		return p.errorf(ntb.ErrLinkDown, "DMA submit")
	case len(src) > 0 && !remote && !local:
		return p.errorf(ntb.ErrRange, "DMA of %d bytes: neither end is a window of this port", len(src))
	}
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		return p.errorf(ntb.ErrClosed, "DMA submit")
	}
	d.queue = append(d.queue, dmaDesc{dst: dst, src: src, done: done, remote: remote, epoch: epoch})
	d.mu.Unlock()
	d.signal()
	return nil
}

func (d *dmaChan) signal() {
	select {
	case d.work <- struct{}{}:
	default:
	}
}

// Wait returns once every copy submitted so far is complete, with the
// first error among them.
func (d *dmaChan) Wait() error {
	m := make(chan struct{})
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		return d.p.errorf(ntb.ErrClosed, "DMA wait")
	}
	d.queue = append(d.queue, dmaDesc{marker: m})
	d.mu.Unlock()
	d.signal()
	select {
	case <-m:
	case <-d.done:
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	err := d.err
	d.err = nil
	if err == nil && d.stopped {
		err = d.p.errorf(ntb.ErrClosed, "DMA wait")
	}
	return err
}

func (d *dmaChan) run() {
	defer close(d.done)
	for {
		d.mu.Lock()
		for len(d.queue) == 0 && !d.stopped {
			d.mu.Unlock()
			<-d.work
			d.mu.Lock()
		}
		if d.stopped {
			q := d.queue
			d.queue = nil
			d.mu.Unlock()
			for _, x := range q {
				if x.done != nil {
					x.done(d.p.errorf(ntb.ErrClosed, "DMA"))
				}
			}
			return
		}
		x := d.queue[0]
		d.queue = d.queue[1:]
		d.mu.Unlock()
		if x.marker != nil {
			close(x.marker)
			continue
		}
		err := d.perform(x)
		if err != nil {
			d.mu.Lock()
			if d.err == nil {
				d.err = err
			}
			d.mu.Unlock()
		}
		if x.done != nil {
			x.done(err)
		}
	}
}

// perform spends the descriptor's virtual time and copies its bytes.
func (d *dmaChan) perform(x dmaDesc) error {
	p, m := d.p, d.p.f.cfg.Model
	setup := m.DMASetup + m.OpCost
	if m.SetupJitter > 0 {
		setup += time.Duration(float64(m.DMASetup) * m.SetupJitter * d.rng.Float64())
	}
	time.Sleep(setup)
	if !x.remote {
		time.Sleep(time.Duration(float64(len(x.src)) / m.LocalCopyBytesPerSec * 1e9))
		copy(x.dst, x.src)
		p.stats.dmaDescs.Add(1)
		p.stats.dmaBytes.Add(uint64(len(x.src)))
		return nil
	}
	if !p.alive(x.epoch) {
		return p.errorf(ntb.ErrLinkDown, "DMA of %d bytes", len(x.src))
	}
	p.out().carry(m.WireBytes(len(x.src)))
	time.Sleep(m.PostedWrite)
	// The bytes land only if the link stayed up: hold the link's lock so
	// that a down (which resets the translations) cannot come between.
	p.l.mu.Lock()
	ok := p.l.up && p.l.epoch == x.epoch
	if ok {
		copy(x.dst, x.src)
	}
	p.l.mu.Unlock()
	if !ok {
		return p.errorf(ntb.ErrLinkDown, "DMA of %d bytes", len(x.src))
	}
	p.stats.dmaDescs.Add(1)
	p.stats.dmaBytes.Add(uint64(len(x.src)))
	return nil
}

// stop ends the channel; descriptors still queued fail with ErrClosed.
func (d *dmaChan) stop() {
	d.mu.Lock()
	d.stopped = true
	d.mu.Unlock()
	d.signal()
	<-d.done
}
