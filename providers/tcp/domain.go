package tcp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/providers/provkit"
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
	refused    core.LogLimit  // anyone may connect: refusals must not flood the log
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
	// inputs watches the connections' sockets for InputPending; made at
	// its first call, closed once shutdown has closed the connections.
	inputs inputSet

	// pollMax caps how long readers poll (poll.go): 0 until Open has
	// counted this host's PEs. pollGated says that they poll only while
	// the host's CPUs have room (cpuRoom).
	pollMax   atomic.Int64
	pollGated bool
	// lockedCallers: the callers are goroutines locked to their threads
	// (core.Config.LockedCallers); issuers' writes wait in poll(2).
	lockedCallers bool

	closed  atomic.Bool // the API refuses new work
	closing atomic.Bool // connections are being torn down
	closer  provkit.CloseOnce

	mu        sync.Mutex // guards the fields below and replacing regions
	nregions  int
	endpoints map[*endpoint]struct{}
}

var (
	_ core.Domain      = (*domain)(nil)
	_ core.LocalWaiter = (*domain)(nil)
	_ core.AckHolder   = (*domain)(nil)
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
		endpoints: map[*endpoint]struct{}{}, lockedCallers: cfg.LockedCallers}
	d.regions.Store(&[]*region{})
	here, err := hostPeers(cfg)
	if err != nil {
		return nil, err
	}
	set, err := readSettings(cfg, here, b.Size())
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
	// One count of the PEs that share this PE's CPUs decides both the
	// sockets (before any connection is made) and the poll gate below.
	sharing := sharingCPUs(addrs, d.rank)
	d.set.chooseSocket(sharing, cfg.LockedCallers)

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
	// See poll.go: never poll with more PEs than CPUs; with more of the
	// runtime's processors than CPUs, only while the CPUs have room.
	roomStall.Store(int32(set.pollStall))
	if cpus := set.cpus; sharing <= cpus {
		d.pollGated = sharing*runtime.GOMAXPROCS(0) > cpus
		d.pollMax.Store(int64(set.poll))
	}
	return d, nil
}

// Rank and Size implement core.Domain.
func (d *domain) Rank() int { return d.rank }
func (d *domain) Size() int { return d.npes }

func (d *domain) opErr(op string, err error) error { return provkit.Err(Name, op, -1, err) }

// NewEndpoint implements core.Domain. The options are hints this provider
// has no use for: endpoints share the connections, each with its own
// counter.
func (d *domain) NewEndpoint(opts core.EndpointOptions) (core.Endpoint, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed.Load() {
		return nil, d.opErr("new endpoint", core.ErrClosed)
	}
	e := &endpoint{Endpoint: provkit.Endpoint{Provider: Name, NPEs: d.npes}, d: d}
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
	return d.closer.Do(d.close)
}

func (d *domain) close() error {
	d.mu.Lock()
	d.closed.Store(true)
	for e := range d.endpoints {
		e.MarkClosed()
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
			errs = append(errs, r.release())
		}
	}
	if err := errors.Join(errs...); err != nil {
		return d.opErr("close", err)
	}
	return nil
}

// shutdown stops listening and ends every connection, cleanly (BYE, then
// waiting up to TIMEOUT in all for it to be written and for the peer's)
// if clean, and returns once no
// goroutine of the domain runs: after it nothing touches the regions.
func (d *domain) shutdown(clean bool) {
	d.closing.Store(true)
	_ = d.ln.Close()
	<-d.acceptDone
	d.handshakes.Wait()
	d.refused.Flush(d.log)
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
	wait:
		for _, c := range conns {
			if c == nil {
				continue
			}
			// Our BYE is out and the peer's is in: closing now sends
			// nothing the peer has not read to the end.
			for _, done := range []chan struct{}{c.writerDone, c.readerDone} {
				select {
				case <-done:
				case <-timer.C:
					break wait // the rest are dropped unclean
				}
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
	d.inputs.close()
}
