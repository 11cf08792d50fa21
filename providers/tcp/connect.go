package tcp

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/goshmem/goshmem/core"
)

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
		// The logger names this PE already (the caller's "pe").
		d.refused.Warn(d.log, "tcp: refused a connection", "from", nc.RemoteAddr().String(), "err", err)
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
