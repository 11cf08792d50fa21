package emu

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/ntb"
	"github.com/goshmem/goshmem/internal/sys"
)

// filePrefix starts the name of every file of a ring with the given tag.
func filePrefix(tag string) string {
	if tag == "" {
		return "ntb-"
	}
	return "ntb-" + tag + "-"
}

// LinkPath is the path of link k's file in dir.
func LinkPath(dir, tag string, k int) string {
	return filepath.Join(dir, fmt.Sprintf("%slink%d", filePrefix(tag), k))
}

// createLink creates link k's file for a ring of n hosts: under a
// temporary name first, so that the neighbour never maps a file whose
// header is not yet written.
func createLink(dir string, k, n int, o *Options) ([]byte, header, error) {
	h := header{Version: linkVersion, Link: uint32(k), Hosts: uint32(n), Spads: spadCount, DBBits: dbBits,
		Windows: uint32(o.Windows), MWMax: uint64(o.MWMax), FileSize: linkFileSize}
	final := LinkPath(dir, o.Tag, k)
	tmp := final + ".new"
	// The interrupt lines exist before the link file does, so a host
	// that finds the file finds them.
	if err := makeIRQs(final); err != nil {
		return nil, h, err
	}
	b, err := sys.CreateShared(tmp, linkFileSize)
	if err != nil {
		removeIRQs(final)
		return nil, h, fmt.Errorf("ntb emu: create link %d: %w", k, err)
	}
	h.encode(b)
	if err := os.Rename(tmp, final); err != nil {
		removeIRQs(final)
		return nil, h, errors.Join(fmt.Errorf("ntb emu: create link %d: %w", k, err), os.Remove(tmp), sys.Unmap(b))
	}
	return b, h, nil
}

// openLink maps link k's file, waiting up to timeout for its creator, and
// checks that it is the link it should be.
func openLink(dir string, k, n int, o *Options, timeout time.Duration) ([]byte, header, error) {
	path := LinkPath(dir, o.Tag, k)
	deadline := time.Now().Add(timeout)
	var pause core.Backoff
	for {
		b, err := sys.OpenShared(path, linkFileSize)
		if err == nil {
			h, err := decodeHeader(b)
			if err == nil && (h.Link != uint32(k) || h.Hosts != uint32(n) || h.Windows != uint32(o.Windows) ||
				h.MWMax != uint64(o.MWMax)) {
				err = fmt.Errorf("ntb emu: %s is link %d of %d hosts with %d windows of %d bytes, want link %d of %d with %d of %d",
					path, h.Link, h.Hosts, h.Windows, h.MWMax, k, n, o.Windows, o.MWMax)
			}
			if err != nil {
				return nil, h, errors.Join(fmt.Errorf("ntb emu: open link %d: %w", k, err), sys.Unmap(b))
			}
			return b, h, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, header{}, fmt.Errorf("ntb emu: open link %d: %w", k, err)
		}
		if time.Now().After(deadline) {
			return nil, header{}, &core.PeerLostError{PE: k,
				Reason: fmt.Sprintf("host %d did not create link file %s within %v", k, path, timeout)}
		}
		pause.Pause()
	}
}

// Host is one host of a ring: its two ports, and the faults it injects.
type Host struct {
	// ID is the host's index in the ring, N the ring's size.
	ID, N int
	// Left faces host ID-1, Right host ID+1 (mod N).
	Left, Right *Port

	// inProcess says the host is a goroutine of a ring made by NewRing:
	// killing it stops its ports instead of its process.
	inProcess bool
	linkFile  string // the file of the link this host created, removed at close
	dir, tag  string // where the ring's files live, and their tag
	devTag    string // with lanes: the device's tag, without the lane's
	mu        sync.Mutex
	memGen    int // NewMemory calls so far, naming their files
	timers    []*time.Timer
	closed    bool
}

// Port returns the port facing side s.
func (h *Host) Port(s ntb.Side) *Port {
	if s == ntb.Left {
		return h.Left
	}
	return h.Right
}

// Open attaches this process as host id of a ring of n hosts whose files
// live in dir (created 0700 if missing; a job's core.JobDir). It creates
// the file of link id, the link of its Right port, and maps that of link
// id-1, which host id-1 creates, waiting up to opts.AttachTimeout. The
// ports start with the link disabled: call LinkEnable on each.
//
// Files are 0600. A host removes the files it created when it closes; if
// its process dies, they stay until the directory is removed (the
// launcher removes a job's directory when the job ends).
func Open(dir string, id, n int, opts Options) (*Host, error) {
	if err := opts.validate(n); err != nil {
		return nil, err
	}
	if id < 0 || id >= n {
		return nil, fmt.Errorf("ntb emu: host %d is not in a ring of %d hosts (0 to %d): %w", id, n, n-1, core.ErrInvalid)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("ntb emu: %w", err)
	}
	o := opts
	if o.Lanes > 1 {
		return openLane(dir, id, n, o)
	}
	right, hdr, err := createLink(dir, id, n, &o)
	if err != nil {
		return nil, err
	}
	return attach(dir, id, n, &o, right, hdr, false)
}

// attach makes host id's ports over right, the mapping of the link file
// it created, and the file of its left link, which it opens.
func attach(dir string, id, n int, o *Options, right []byte, rhdr header, inProcess bool) (*Host, error) {
	lk := (id + n - 1) % n
	left, lhdr, err := openLink(dir, lk, n, o, o.AttachTimeout)
	if err != nil {
		return nil, errors.Join(err, sys.Unmap(right), removeLink(LinkPath(dir, o.Tag, id)))
	}
	return attachShared(dir, id, n, o, right, rhdr, left, lhdr, nil, nil, inProcess)
}

// attachShared makes host id's ports over right and left, the mappings
// of its two link files, and on a lane other than 0 over sharedRight and
// sharedLeft, lane 0's files of the same links (nil otherwise). The
// ports own every mapping from now on.
func attachShared(dir string, id, n int, o *Options, right []byte, rhdr header, left []byte, lhdr header,
	sharedRight, sharedLeft []byte, inProcess bool) (*Host, error) {
	var err error
	lk := (id + n - 1) % n
	unmap := func(bs ...[]byte) error {
		var errs []error
		for _, b := range bs {
			if b != nil {
				errs = append(errs, sys.Unmap(b))
			}
		}
		return errors.Join(errs...)
	}
	h := &Host{ID: id, N: n, inProcess: inProcess, linkFile: LinkPath(dir, o.Tag, id), dir: dir, tag: o.Tag}
	if h.Right, err = newLanePort(dir, id, id, ntb.Right, right, sharedRight, rhdr, o); err != nil {
		return nil, errors.Join(err, unmap(right, left, sharedRight, sharedLeft), h.removeFiles())
	}
	if h.Left, err = newLanePort(dir, id, lk, ntb.Left, left, sharedLeft, lhdr, o); err != nil {
		return nil, errors.Join(err, h.Right.Close(), unmap(left, sharedLeft), h.removeFiles())
	}
	// The faults of a partitioned device's links are injected once, by
	// lane 0: the link is the device's, and every lane obeys lane 0's.
	if o.Lane == 0 {
		h.schedule(o.Faults)
	}
	return h, nil
}

// schedule arms the faults this host injects.
func (h *Host) schedule(faults []Fault) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, f := range faults {
		if f.injector() != h.ID {
			continue
		}
		h.timers = append(h.timers, time.AfterFunc(f.After, func() { h.Inject(f.Kind) }))
	}
}

// Inject applies a fault to this host: FaultLinkDown and FaultLinkUp act
// on the link of its Right port, FaultKill on the host itself.
func (h *Host) Inject(k FaultKind) {
	switch k {
	case FaultLinkDown, FaultLinkUp:
		_ = h.Right.SetLinkDown(k == FaultLinkDown) // a closed port has no link to force
	case FaultKill:
		h.Kill()
	}
}

// Kill ends the host as a crash would. A host opened with Open kills its
// process (SIGKILL); a host of a NewRing stops its ports at once, marked
// as dead for their peers, and leaves its files for Ring.Close.
func (h *Host) Kill() {
	if !h.inProcess {
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			_ = p.Kill()
		}
		select {} // the signal is on its way
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	h.stopTimers()
	h.mu.Unlock()
	_ = h.Left.shutdown(true)
	_ = h.Right.shutdown(true)
}

func (h *Host) stopTimers() {
	for _, t := range h.timers {
		t.Stop()
	}
	h.timers = nil
}

// Close closes both ports and removes the link file this host created.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.stopTimers()
	h.mu.Unlock()
	// A copy's completion on one port may read or write the other port's
	// windows (a relay's payload): every DMA engine of the host stops
	// before either port releases its windows.
	for _, p := range []*Port{h.Left, h.Right} {
		for _, c := range p.dma {
			c.stop()
		}
	}
	return errors.Join(h.Left.Close(), h.Right.Close(), h.removeFiles())
}

// removeFiles removes the link file this host created and its interrupt
// lines.
func (h *Host) removeFiles() error { return removeLink(h.linkFile) }

// removeLink removes the file of a link and its interrupt lines.
func removeLink(path string) error {
	removeIRQs(path)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Ring is a ring of hosts that are goroutines of one process, for tests
// and tools.
type Ring struct {
	Hosts []*Host
}

// NewRing makes a ring of n hosts in this process, with its files in dir
// (created 0700 if missing). Each host maps its link files itself, as a
// process would. Every port starts with the link disabled; EnableAll
// enables them all and waits for the links.
func NewRing(dir string, n int, opts Options) (*Ring, error) {
	if err := opts.validate(n); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("ntb emu: %w", err)
	}
	o := opts
	r := &Ring{}
	files := make([][]byte, n)
	hdrs := make([]header, n)
	for k := range n {
		b, h, err := createLink(dir, k, n, &o)
		if err != nil {
			for j := range k {
				err = errors.Join(err, sys.Unmap(files[j]), removeLink(LinkPath(dir, o.Tag, j)))
			}
			return nil, err
		}
		files[k], hdrs[k] = b, h
	}
	for id := range n {
		h, err := attach(dir, id, n, &o, files[id], hdrs[id], true)
		if err != nil {
			for j := id + 1; j < n; j++ {
				err = errors.Join(err, sys.Unmap(files[j]), removeLink(LinkPath(dir, o.Tag, j)))
			}
			return nil, errors.Join(err, r.Close())
		}
		r.Hosts = append(r.Hosts, h)
	}
	return r, nil
}

// EnableAll enables every port's link and waits up to timeout for all of
// them to come up.
func (r *Ring) EnableAll(timeout time.Duration) error {
	for _, h := range r.Hosts {
		for _, p := range []*Port{h.Left, h.Right} {
			if err := p.LinkEnable(); err != nil {
				return err
			}
		}
	}
	for _, h := range r.Hosts {
		for _, p := range []*Port{h.Left, h.Right} {
			if err := p.WaitLink(timeout); err != nil {
				return err
			}
		}
	}
	return nil
}

// Close closes every host, killed ones included, and removes the ring's
// files.
func (r *Ring) Close() error {
	var errs []error
	for _, h := range r.Hosts {
		errs = append(errs, h.Close(), h.removeFiles())
	}
	r.Hosts = nil
	return errors.Join(errs...)
}
