package ntbring

import (
	"sync"

	"github.com/goshmem/goshmem/internal/ntb"
)

// fwdItem is a transfer a forwarder sends for a worker.
type fwdItem struct {
	side    ntb.Side
	m       meta
	payload []byte
	buf     *[]byte // returned to the pool once sent; nil if payload is not pooled
}

// fwdQueue is unbounded, so that a worker never waits for a link.
type fwdQueue struct {
	mu    sync.Mutex
	items []fwdItem
	wake  chan struct{}
}

// queue hands a transfer to the forwarders.
func (p *seed) queue(side ntb.Side, m meta, payload []byte, buf *[]byte) {
	p.fwd.mu.Lock()
	p.fwd.items = append(p.fwd.items, fwdItem{side: side, m: m, payload: payload, buf: buf})
	p.fwd.mu.Unlock()
	select {
	case p.fwd.wake <- struct{}{}:
	default:
	}
}

// answer sends a worker's answer to a request: at once if the link is
// free, else through a forwarder.
func (p *seed) answer(m meta, payload []byte, buf *[]byte) {
	side := p.d.sideTo(int(m.dst))
	sent, err := p.links[side].trySend(m, payload)
	if err != nil {
		p.d.fail(err)
	}
	if sent || err != nil {
		p.d.bufs.put(buf)
		return
	}
	p.queue(side, m, payload, buf)
}

// forward is a forwarder's loop.
func (p *seed) forward() {
	defer p.wg.Done()
	for {
		p.fwd.mu.Lock()
		var it fwdItem
		ok := len(p.fwd.items) > 0
		if ok {
			it = p.fwd.items[0]
			p.fwd.items[0] = fwdItem{}
			p.fwd.items = p.fwd.items[1:]
			if len(p.fwd.items) > 0 {
				// More work: make sure another forwarder looks.
				select {
				case p.fwd.wake <- struct{}{}:
				default:
				}
			}
		}
		p.fwd.mu.Unlock()
		if !ok {
			select {
			case <-p.stop:
				return
			case <-p.fwd.wake:
			}
			continue
		}
		if err := p.links[it.side].send(it.m, it.payload, p.s.timeout, p.d.abort); err != nil {
			p.d.fail(err)
		}
		p.d.bufs.put(it.buf)
	}
}
