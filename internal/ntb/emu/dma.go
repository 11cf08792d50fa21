package emu

import (
	"sync"
	"time"

	"github.com/goshmem/goshmem/internal/ntb"
)

// dmaChunk is how much a channel copies between two looks at the link.
const dmaChunk = 256 << 10

// dmaChan is one DMA channel: a goroutine that performs its descriptors
// in submission order.
type dmaChan struct {
	p   *Port
	idx int

	mu        sync.Mutex
	work      sync.Cond // the queue got a descriptor, or the channel stops
	idle      sync.Cond // completed advanced
	queue     []desc
	spare     []desc
	submitted uint64
	completed uint64
	err       error // first error since the last Wait
	stopped   bool
	done      chan struct{}

	// free is when the engine finished its last descriptor, in the
	// timing model (Unix nanoseconds); only the channel's goroutine
	// uses it.
	free int64
}

type desc struct {
	dst, src []byte
	outbound bool  // crosses the link
	queued   int64 // when Submit queued it, Unix nanoseconds
	done     func(error)
}

func newDMAChan(p *Port, idx int) *dmaChan {
	c := &dmaChan{p: p, idx: idx, done: make(chan struct{})}
	c.work.L = &c.mu
	c.idle.L = &c.mu
	go c.run()
	return c
}

// DMAChannels is 4, as on a PEX87xx.
func (p *Port) DMAChannels() int { return dmaChannels }

// DMA returns channel c.
func (p *Port) DMA(c int) (ntb.DMAChannel, error) {
	if err := p.check("dma channel"); err != nil {
		return nil, err
	}
	if c < 0 || c >= dmaChannels {
		return nil, p.errorf(ntb.ErrRange, "dma channel %d: channels are 0 to %d", c, dmaChannels-1)
	}
	return p.dma[c], nil
}

// Submit queues a copy of src into the first len(src) bytes of dst. One of
// them must lie inside a window of the port: an outbound window (a DMA
// write across the link) or an inbound translation.
func (c *dmaChan) Submit(dst, src []byte, done func(error)) error {
	p := c.p
	if p.closed.Load() {
		return p.errorf(ntb.ErrClosed, "dma %d submit", c.idx)
	}
	if len(dst) < len(src) {
		return p.errorf(ntb.ErrRange, "dma %d submit: %d bytes do not fit a destination of %d", c.idx, len(src), len(dst))
	}
	inDst, outDst := p.win.contains(dst[:len(src)])
	inSrc, outSrc := p.win.contains(src)
	if len(src) > 0 && !inDst && !inSrc {
		return p.errorf(ntb.ErrRange, "dma %d submit: neither the destination nor the source lies in a window of the port", c.idx)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return p.errorf(ntb.ErrClosed, "dma %d submit", c.idx)
	}
	c.queue = append(c.queue, desc{dst: dst[:len(src)], src: src, outbound: outDst || outSrc, queued: time.Now().UnixNano(), done: done})
	c.submitted++
	c.work.Signal()
	return nil
}

// Wait returns when every descriptor submitted before it is complete,
// with the first error among those completed since the last Wait.
func (c *dmaChan) Wait() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for target := c.submitted; c.completed < target; {
		c.idle.Wait()
	}
	err := c.err
	c.err = nil
	return err
}

// stop fails what is queued with ErrClosed and ends the goroutine.
func (c *dmaChan) stop() {
	c.mu.Lock()
	c.stopped = true
	c.work.Signal()
	c.mu.Unlock()
	<-c.done
}

func (c *dmaChan) run() {
	defer close(c.done)
	for {
		c.mu.Lock()
		for len(c.queue) == 0 && !c.stopped {
			c.work.Wait()
		}
		batch, stopped := c.queue, c.stopped
		c.queue, c.spare = c.spare[:0], nil
		c.mu.Unlock()

		for i := range batch {
			d := &batch[i]
			var err error
			if stopped {
				err = c.p.errorf(ntb.ErrClosed, "dma %d", c.idx)
			} else {
				err = c.copy(d)
			}
			if d.done != nil {
				d.done(err)
			}
			*d = desc{}
			c.mu.Lock()
			c.completed++
			if err != nil && c.err == nil {
				c.err = err
			}
			c.idle.Broadcast()
			c.mu.Unlock()
		}
		c.mu.Lock()
		c.spare = batch[:0]
		if stopped && len(c.queue) == 0 {
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
	}
}

// copy performs one descriptor under the timing model: the setup cost,
// then the bytes in chunks, each crossing the link only while it is up,
// paced by the port's share of the link's bandwidth.
//
// The engine starts a descriptor once it is queued and the one before it
// is done, in the model's time, however late this goroutine gets to run:
// a real engine does not wait for a CPU, nor for the completion callback
// of the descriptor before. Time the goroutine lost to the scheduler is
// made up by copying ahead of the clock instead of being lost to the link.
func (c *dmaChan) copy(d *desc) error {
	p := c.p
	m := p.opts.Model
	at := max(d.queued, c.free) + int64(m.DMASetup)
	for off := 0; off < len(d.src); off += dmaChunk {
		end := min(off+dmaChunk, len(d.src))
		// The chunk books its link time before it copies, so the copy
		// overlaps the time the link would take.
		if m.DMABytesPerSec > 0 {
			at = p.reserve(at, end-off, m.DMABytesPerSec)
		}
		if err := c.chunk(d, off, end); err != nil {
			return err
		}
		waitUntil(time.Unix(0, at))
	}
	c.free = at
	p.own.count(statDMADesc, 1)
	p.own.count(statDMABytes, uint64(len(d.src)))
	return nil
}

func (c *dmaChan) chunk(d *desc, off, end int) error {
	p := c.p
	if p.closed.Load() {
		return p.errorf(ntb.ErrClosed, "dma %d: %d of %d bytes copied", c.idx, off, len(d.src))
	}
	if !d.outbound {
		copy(d.dst[off:end], d.src[off:end])
		return nil
	}
	p.cross.RLock()
	defer p.cross.RUnlock()
	if !p.LinkIsUp() {
		return p.errorf(ntb.ErrLinkDown, "dma %d: %d of %d bytes copied", c.idx, off, len(d.src))
	}
	copy(d.dst[off:end], d.src[off:end])
	return nil
}

// reserve books n bytes of the port's outbound bandwidth, from time from
// on or once the bytes booked before have crossed, and returns when they
// will have crossed (Unix nanoseconds).
func (p *Port) reserve(from int64, n int, bytesPerSec float64) int64 {
	cost := int64(float64(n) / bytesPerSec * 1e9)
	for {
		busy := p.busyUntil.Load()
		start := max(from, busy)
		if p.busyUntil.CompareAndSwap(busy, start+cost) {
			return start + cost
		}
	}
}
