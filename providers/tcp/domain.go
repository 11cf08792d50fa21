package tcp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/sys"
)

// domain is one PE's membership in a tcp job.
type domain struct {
	rank, npes int
	boot       core.Bootstrap
	secret     []byte
	set        settings
	log        *slog.Logger
	id         uint64 // PE 0's random number: names the domain in handshakes

	ln         net.Listener
	acceptDone chan struct{}
	handshakes sync.WaitGroup // accepted connections in their handshake
	dialers    sync.WaitGroup

	// conns[pe] is the connection to pe, nil for this PE. Filled while
	// Open runs, under connMu; read-only once Open has returned.
	connMu  sync.Mutex
	conns   []*conn
	nconns  int
	connect chan struct{} // a connection was attached

	// regions[idx] is the region of that index, nil while it is being
	// created or after its creation failed. Replaced whole (copy on
	// write) under mu, so readers load it without a lock.
	regions atomic.Pointer[[]*region]

	waiters waiters

	closed    atomic.Bool // the API refuses new work
	closing   atomic.Bool // connections are being torn down
	closeOnce sync.Once
	closeErr  error

	mu        sync.Mutex // guards the fields below and replacing regions
	nregions  int
	endpoints map[*endpoint]struct{}
}

var (
	_ core.Domain      = (*domain)(nil)
	_ core.LocalWaiter = (*domain)(nil)
)

// Open joins this PE to the job: it listens, exchanges listen addresses
// through the bootstrap, and connects to every other PE (dialing those of
// lower rank, accepting those of higher). Every fallible step ends in
// core.Agree, so all PEs fail together.
func (provider) Open(cfg *core.Config) (core.Domain, error) {
	b := cfg.Bootstrap
	if b == nil {
		return nil, fmt.Errorf("no bootstrap in the configuration: %w", core.ErrInvalid)
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &domain{rank: b.Rank(), npes: b.Size(), boot: b, secret: cfg.Secret, log: log,
		acceptDone: make(chan struct{}), connect: make(chan struct{}, 1),
		endpoints: map[*endpoint]struct{}{}}
	d.regions.Store(&[]*region{})
	set, err := readSettings(cfg)
	if err == nil {
		d.set = set
		d.ln, err = net.Listen("tcp", set.listen)
		if err != nil {
			err = fmt.Errorf("listen on %s (set %s or %s): %w", set.listen, paramAddr.Env, paramIface.Env, err)
		}
	}
	if err := core.Agree(b, err); err != nil {
		if d.ln != nil {
			_ = d.ln.Close()
		}
		return nil, err
	}

	msg := binary.LittleEndian.AppendUint64(nil, rand.Uint64())
	all, err := b.Allgather(append(msg, strings.Join(advertised(d.ln.Addr()), ",")...))
	if err != nil {
		_ = d.ln.Close()
		return nil, fmt.Errorf("exchange of listen addresses: %w", err)
	}
	addrs, err := parseAddrs(all)
	if err != nil {
		_ = d.ln.Close()
		return nil, err
	}
	d.id = binary.LittleEndian.Uint64(all[0])
	d.conns = make([]*conn, d.npes)

	deadline := time.Now().Add(set.connect)
	go d.acceptLoop()
	errs := make(chan error, d.npes)
	for peer := range d.rank {
		d.dialers.Add(1)
		go func() {
			defer d.dialers.Done()
			if err := d.dial(peer, addrs[peer], deadline); err != nil {
				errs <- err
			}
		}()
	}
	err = d.awaitConns(deadline, errs)
	if err := core.Agree(b, err); err != nil {
		d.closed.Store(true)
		d.shutdown(false)
		return nil, err
	}
	return d, nil
}

// parseAddrs checks the address exchange: 8 bytes of random number, then
// a comma-separated list of host:port.
func parseAddrs(all [][]byte) ([][]string, error) {
	out := make([][]string, len(all))
	for pe, m := range all {
		if len(m) <= 8 {
			return nil, fmt.Errorf("PE %d sent a malformed address exchange of %d bytes: %w", pe, len(m), core.ErrInvalid)
		}
		for _, a := range strings.Split(string(m[8:]), ",") {
			if _, _, err := net.SplitHostPort(a); err != nil {
				return nil, fmt.Errorf("PE %d advertised a malformed address %q: %w", pe, a, core.ErrInvalid)
			}
			out[pe] = append(out[pe], a)
		}
	}
	return out, nil
}

// awaitConns waits until every peer is connected, a dialer gave up, the
// bootstrap reports a lost PE, or the deadline passes.
func (d *domain) awaitConns(deadline time.Time, errs <-chan error) error {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		d.connMu.Lock()
		n := d.nconns
		d.connMu.Unlock()
		if n == d.npes-1 {
			return nil
		}
		select {
		case <-d.connect:
		case err := <-errs:
			return err
		case <-tick.C:
			if err := d.boot.Err(); err != nil {
				return err
			}
		case <-timer.C:
			return fmt.Errorf("connections to %s not made within %s (%s): %w",
				d.missing(), d.set.connect, paramConnect.Env, core.ErrTimeout)
		}
	}
}

// missing names the peers not connected yet.
func (d *domain) missing() string {
	d.connMu.Lock()
	defer d.connMu.Unlock()
	var s []string
	for pe, c := range d.conns {
		if c == nil && pe != d.rank {
			s = append(s, fmt.Sprint(pe))
		}
	}
	return "PEs " + strings.Join(s, ", ")
}

// dial connects to peer, trying its advertised addresses in order.
func (d *domain) dial(peer int, addrs []string, deadline time.Time) error {
	h := hello{size: uint32(d.npes), from: uint32(d.rank), to: uint32(peer), domain: d.id}
	var errs []error
	for _, a := range addrs {
		try := time.Now().Add(d.set.timeout)
		if deadline.Before(try) {
			try = deadline
		}
		nc, err := (&net.Dialer{Deadline: try}).Dial("tcp", a)
		if err == nil {
			err = dialHandshake(nc, d.secret, h, try)
			if err == nil {
				return d.attach(peer, nc, false)
			}
			_ = nc.Close()
		}
		errs = append(errs, fmt.Errorf("%s: %w", a, err))
		if d.closing.Load() {
			break
		}
	}
	return fmt.Errorf("connect to PE %d: %w", peer, errors.Join(errs...))
}

// maxHandshakes bounds the connections in their handshake at once, so
// strangers holding connections open cannot exhaust this PE.
const maxHandshakes = 64

func (d *domain) acceptLoop() {
	defer close(d.acceptDone)
	slots := make(chan struct{}, maxHandshakes)
	for {
		nc, err := d.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ECONNABORTED) {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			d.log.Warn("tcp: listener failed; no more connections are accepted", "err", err)
			return
		}
		select {
		case slots <- struct{}{}:
			d.handshakes.Add(1)
			go func() {
				defer d.handshakes.Done()
				defer func() { <-slots }()
				d.accept(nc)
			}()
		default:
			_ = nc.Close()
		}
	}
}

// accept runs the handshake on a connection a peer (or a stranger) made.
// Whoever it is gets at most TIMEOUT to prove the job secret.
func (d *domain) accept(nc net.Conn) {
	deadline := time.Now().Add(d.set.timeout)
	peer, err := acceptHandshake(nc, d.secret, deadline, func(h *hello) error {
		switch {
		case h.domain != d.id || int(h.size) != d.npes || int(h.to) != d.rank:
			return fmt.Errorf("%w: a hello for PE %d of %d in domain %#x, but this is PE %d of %d in domain %#x",
				errHandshake, h.to, h.size, h.domain, d.rank, d.npes, d.id)
		case int(h.from) <= d.rank || int(h.from) >= d.npes:
			return fmt.Errorf("%w: a hello from PE %d, which does not dial PE %d", errHandshake, h.from, d.rank)
		}
		return nil // a duplicate is refused by attach, after the proof
	})
	if err == nil {
		err = d.attach(peer, nc, true)
	}
	if err != nil {
		d.log.Warn("tcp: refused a connection", "pe", d.rank, "from", nc.RemoteAddr().String(), "err", err)
		_ = nc.Close()
	}
}

// attach makes nc the connection to peer, unless there is one. The
// acceptor welcomes the dialer here, under connMu, so of two connections
// that passed the handshake at once only one is welcomed.
func (d *domain) attach(peer int, nc net.Conn, welcomeIt bool) error {
	d.connMu.Lock()
	defer d.connMu.Unlock()
	if d.closing.Load() {
		_ = nc.Close()
		return core.ErrClosed
	}
	if d.conns[peer] != nil {
		_ = nc.Close()
		return fmt.Errorf("%w: PE %d is connected already", errHandshake, peer)
	}
	if welcomeIt {
		if err := nc.SetWriteDeadline(time.Now().Add(d.set.timeout)); err != nil {
			return err
		}
		if _, err := nc.Write([]byte{welcome}); err != nil {
			return err
		}
		if err := nc.SetWriteDeadline(time.Time{}); err != nil {
			return err
		}
	}
	d.conns[peer] = newConn(d, peer, nc)
	d.nconns++
	select {
	case d.connect <- struct{}{}:
	default:
	}
	return nil
}

// Rank and Size implement core.Domain.
func (d *domain) Rank() int { return d.rank }
func (d *domain) Size() int { return d.npes }

func (d *domain) opErr(op string, err error) error {
	return &core.OpError{Op: op, PE: -1, Provider: Name, Err: err}
}

// NewEndpoint implements core.Domain. The options are hints this provider
// has no use for: endpoints share the connections, each with its own
// counter.
func (d *domain) NewEndpoint(opts core.EndpointOptions) (core.Endpoint, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed.Load() {
		return nil, d.opErr("new endpoint", core.ErrClosed)
	}
	e := &endpoint{d: d, npes: d.npes}
	e.qcond.L = &e.qmu
	d.endpoints[e] = struct{}{}
	return e, nil
}

// Close implements core.Domain. It waits at a bootstrap barrier until
// every PE has stopped issuing, then closes each connection cleanly (a
// BYE each way, after everything queued before it), stops the progress
// goroutines and unmaps the regions. If the barrier fails (a PE was lost)
// the connections are simply dropped. Idempotent.
func (d *domain) Close() error {
	first := false
	d.closeOnce.Do(func() {
		first = true
		d.closeErr = d.close()
	})
	if first {
		return d.closeErr
	}
	return nil
}

func (d *domain) close() error {
	d.mu.Lock()
	d.closed.Store(true)
	for e := range d.endpoints {
		e.closed.Store(true)
	}
	d.endpoints = nil
	d.mu.Unlock()
	berr := d.boot.Barrier()
	d.shutdown(berr == nil)
	var errs []error
	if berr != nil {
		errs = append(errs, fmt.Errorf("barrier: %w", berr))
	}
	d.mu.Lock()
	regs := *d.regions.Load()
	d.regions.Store(&[]*region{})
	d.mu.Unlock()
	for _, r := range regs {
		if r != nil {
			errs = append(errs, sys.Unmap(r.mem))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return d.opErr("close", err)
	}
	return nil
}

// shutdown stops listening and ends every connection, cleanly (BYE, then
// waiting up to TIMEOUT for the peer's) if clean, and returns once no
// goroutine of the domain runs: after it nothing touches the regions.
func (d *domain) shutdown(clean bool) {
	d.closing.Store(true)
	_ = d.ln.Close()
	<-d.acceptDone
	d.handshakes.Wait()
	d.dialers.Wait()
	d.connMu.Lock()
	conns := d.conns
	d.connMu.Unlock()
	if clean {
		for _, c := range conns {
			if c != nil {
				c.sendBye()
			}
		}
		timer := time.NewTimer(d.set.timeout)
		defer timer.Stop()
		for _, c := range conns {
			if c == nil {
				continue
			}
			select {
			case <-c.readerDone:
			case <-timer.C:
			}
		}
	}
	for _, c := range conns {
		if c != nil {
			c.fail("this PE closed the domain")
			<-c.readerDone
			<-c.writerDone
		}
	}
}

// region is a symmetric region: this PE's part, in memory of its own.
type region struct {
	d    *domain
	idx  uint32
	size int
	mem  []byte
}

func (r *region) Local() []byte {
	if r.d.closed.Load() {
		return nil
	}
	return r.mem
}

// maxRegion bounds a region so that (index, offset) fits a watch key.
const maxRegion = 1 << watchOffBits

// NewRegion implements core.Domain. The PEs exchange sizes first and all
// fail, naming them, if they differ. Each PE maps its part and publishes
// it to its progress goroutines before the closing agreement, so no put
// can arrive for a region its target does not know yet.
func (d *domain) NewRegion(size int) (core.Region, error) {
	if d.closed.Load() {
		return nil, d.opErr("new region", core.ErrClosed)
	}
	d.mu.Lock()
	idx := d.nregions
	d.nregions++
	d.mu.Unlock()
	msg := binary.LittleEndian.AppendUint64(nil, uint64(int64(size)))
	msg = binary.LittleEndian.AppendUint32(msg, uint32(idx))
	all, err := d.boot.Allgather(msg)
	if err != nil {
		return nil, d.opErr("new region", fmt.Errorf("exchange of sizes: %w", err))
	}
	if err := sizesAgree(all, idx, size); err != nil {
		return nil, d.opErr("new region", err)
	}
	r := &region{d: d, idx: uint32(idx), size: size}
	if size > 0 {
		r.mem, err = sys.MapPrivate(size)
		if errors.Is(err, syscall.ENOMEM) {
			err = fmt.Errorf("region of %d bytes: %w: %w", size, err, core.ErrNoMemory)
		}
	}
	if err == nil {
		d.publish(idx, r)
	}
	if err = core.Agree(d.boot, err); err != nil {
		d.publish(idx, nil)
		return nil, d.opErr("new region", errors.Join(err, sys.Unmap(r.mem)))
	}
	return r, nil
}

// publish sets regions[idx] to r.
func (d *domain) publish(idx int, r *region) {
	d.mu.Lock()
	defer d.mu.Unlock()
	old := *d.regions.Load()
	regs := make([]*region, max(len(old), idx+1))
	copy(regs, old)
	regs[idx] = r
	d.regions.Store(&regs)
}

// sizesAgree checks the size exchange of NewRegion: 8 bytes of size and 4
// of region index from every PE, all equal.
func sizesAgree(all [][]byte, idx, size int) error {
	var diff []string
	for pe, m := range all {
		if len(m) != 12 {
			return fmt.Errorf("PE %d sent a malformed size exchange of %d bytes: %w", pe, len(m), core.ErrInvalid)
		}
		s, i := int64(binary.LittleEndian.Uint64(m)), int(binary.LittleEndian.Uint32(m[8:]))
		if i != idx {
			return fmt.Errorf("PEs disagree on how many regions they created before: PE %d is at %d, this PE at %d: %w",
				pe, i, idx, core.ErrInvalid)
		}
		if s != int64(size) {
			diff = append(diff, fmt.Sprintf("%d on PE %d", s, pe))
		}
	}
	if len(diff) > 0 {
		return fmt.Errorf("PEs passed different sizes (%d on this PE, %s): %w", size, strings.Join(diff, ", "), core.ErrInvalid)
	}
	if size < 0 || size >= maxRegion {
		return fmt.Errorf("region of %d bytes: allowed 0 to %d: %w", size, maxRegion-1, core.ErrInvalid)
	}
	return nil
}

// target returns the n bytes at h's offset in h's region of this PE, or
// the protocol error of a frame that names memory this PE does not have.
func (d *domain) target(h *header, n, align uint64) ([]byte, error) {
	regs := *d.regions.Load()
	if uint64(h.region) >= uint64(len(regs)) || regs[h.region] == nil {
		return nil, frameErr("%s names region %d, which this PE does not have", opName(h.op), h.region)
	}
	m := regs[h.region].mem
	size := uint64(len(m))
	if h.off > size || n > size-h.off {
		return nil, frameErr("%s of %d bytes at offset %d lies outside region %d of %d bytes", opName(h.op), n, h.off, h.region, size)
	}
	if h.off%align != 0 {
		return nil, frameErr("%s at offset %d is not %d-byte aligned", opName(h.op), h.off, align)
	}
	return m[h.off : h.off+n], nil
}
