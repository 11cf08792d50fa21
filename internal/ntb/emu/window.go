package emu

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/ntb"
	"github.com/goshmem/goshmem/internal/sys"
)

// windows keeps a port's memory windows. An inbound translation is a file
// of its own, created by MWSetTrans, named by the link, the side, the
// window and a generation; the peer maps it by that name when it calls
// PeerMW. Mappings live until the port closes, because the caller may
// still hold slices of them after a translation is cleared or reset; a
// cleared translation's file is removed at once.
type windows struct {
	p  *Port
	mu sync.Mutex
	// gen is the last generation this port gave an inbound translation.
	gen uint32
	// in holds the path of each inbound window's current translation.
	in [maxWindows]string
	// out caches the peer's translations this port has mapped.
	out [maxWindows]struct {
		gen uint32
		b   []byte
	}
	// maps is every mapping this port made, to unmap at close.
	maps []mapping
}

// mapping is a window buffer: an inbound translation of this port, or an
// outbound window (the peer's translation) when outbound.
type mapping struct {
	b        []byte
	outbound bool
}

func (w *windows) init(p *Port) { w.p = p }

// sideName is the letter of a side in file names: a for host k's Right
// port on link k, b for host k+1's Left port.
func sideName(s ntb.Side) string {
	if s == ntb.Right {
		return "a"
	}
	return "b"
}

func (w *windows) path(s ntb.Side, i int, gen uint32) string {
	return filepath.Join(w.p.dir, fmt.Sprintf("%slink%d%s-mw%d-%d", filePrefix(w.p.opts.Tag), w.p.link, sideName(s), i, gen))
}

// checkIndex checks i and enters the port (see Port.use).
func (w *windows) checkIndex(what string, i int) error {
	if n := w.p.MWCount(); i < 0 || i >= n {
		return w.p.errorf(ntb.ErrRange, "%s: window %d, the port has windows 0 to %d", what, i, n-1)
	}
	return w.p.use(what)
}

// MWCount is the number of inbound windows.
func (p *Port) MWCount() int { return int(p.hdr.Windows) }

// PeerMWCount is the number of outbound windows, the peer's MWCount.
func (p *Port) PeerMWCount() int { return int(p.hdr.Windows) }

// MWAlign: translations are page aligned, a multiple of a page long and
// at most the link's window size.
func (p *Port) MWAlign(i int) (addrAlign, sizeAlign, maxSize int64, err error) {
	if err := p.win.checkIndex("window alignment", i); err != nil {
		return 0, 0, 0, err
	}
	p.leave()
	return mwAlign, mwAlign, int64(p.hdr.MWMax), nil
}

// MWSetTrans gives inbound window i a new zeroed buffer of size bytes,
// replacing any translation it had.
func (p *Port) MWSetTrans(i int, size int64) ([]byte, error) {
	return p.win.set(i, size)
}

// MWClearTrans removes inbound window i's translation.
func (p *Port) MWClearTrans(i int) error {
	if err := p.win.checkIndex("clear window translation", i); err != nil {
		return err
	}
	defer p.leave()
	w := &p.win
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.clearLocked(i)
}

func (w *windows) set(i int, size int64) ([]byte, error) {
	p := w.p
	if err := w.checkIndex("set window translation", i); err != nil {
		return nil, err
	}
	defer p.leave()
	if size <= 0 || size > int64(p.hdr.MWMax) || size%mwAlign != 0 {
		return nil, p.errorf(ntb.ErrRange, "set window %d translation of %d bytes: allowed a multiple of %d up to %s",
			i, size, mwAlign, core.FormatSize(int64(p.hdr.MWMax)))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.clearLocked(i); err != nil {
		return nil, err
	}
	w.gen++
	path := w.path(p.side, i, w.gen)
	b, err := sys.CreateShared(path, int(size))
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, p.errorf(err, "set window %d translation", i)
		}
		return nil, p.errorf(errors.Join(err, core.ErrNoMemory), "set window %d translation of %s", i, core.FormatSize(size))
	}
	w.maps = append(w.maps, mapping{b: b})
	w.in[i] = path
	p.own.setWindow(i, window{Gen: w.gen, Size: uint64(size)})
	return b, nil
}

// clearLocked clears window i's translation and removes its file.
func (w *windows) clearLocked(i int) error {
	if w.in[i] == "" {
		return nil
	}
	w.p.own.setWindow(i, window{})
	err := os.Remove(w.in[i])
	w.in[i] = ""
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// reset clears every inbound translation, as a link down does.
func (w *windows) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range w.in {
		_ = w.clearLocked(i) // a file someone removed already is gone either way
	}
}

// PeerMW maps outbound window i, the peer's inbound window i. The slice
// stays valid until this port closes; after the peer changes or clears
// the translation, stores into it reach nothing the peer reads.
func (p *Port) PeerMW(i int) ([]byte, error) {
	w := &p.win
	if err := w.checkIndex("map peer window", i); err != nil {
		return nil, err
	}
	defer p.leave()
	p.cross.RLock()
	defer p.cross.RUnlock()
	if !p.LinkIsUp() {
		return nil, p.errorf(ntb.ErrLinkDown, "map peer window %d", i)
	}
	reg := p.peer.window(i)
	if err := validWindow(reg, p.hdr.MWMax); err != nil {
		return nil, p.errorf(ntb.ErrRange, "map peer window %d: %v", i, err)
	}
	if reg.Gen == 0 {
		return nil, p.errorf(ntb.ErrRange, "map peer window %d: the peer has not translated it", i)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if o := w.out[i]; o.gen == reg.Gen && o.b != nil {
		return o.b, nil
	}
	b, err := sys.OpenShared(w.path(1-p.side, i, reg.Gen), int(reg.Size))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, p.errorf(ntb.ErrRange, "map peer window %d: the peer cleared the translation", i)
		}
		return nil, p.errorf(err, "map peer window %d", i)
	}
	w.maps = append(w.maps, mapping{b: b, outbound: true})
	w.out[i].gen, w.out[i].b = reg.Gen, b
	return b, nil
}

// contains reports whether b lies inside one of the port's window
// mappings, and whether that is an outbound (peer) window.
func (w *windows) contains(b []byte) (ok, outbound bool) {
	if len(b) == 0 {
		return false, false
	}
	lo, hi := mem.Addr(b), mem.Addr(b)+uintptr(len(b))
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range w.maps {
		if mlo := mem.Addr(m.b); lo >= mlo && hi <= mlo+uintptr(len(m.b)) {
			return true, m.outbound
		}
	}
	return false, false
}

// release removes this port's translation files and unmaps every window,
// or, for a killed port, revokes them (see Port.shutdown).
func (w *windows) release(killed bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	for i := range w.in {
		errs = append(errs, w.clearLocked(i))
	}
	for _, m := range w.maps {
		if killed {
			errs = append(errs, sys.Revoke(m.b))
		} else {
			errs = append(errs, sys.Unmap(m.b))
		}
	}
	w.maps = nil
	w.out = [maxWindows]struct {
		gen uint32
		b   []byte
	}{}
	return errors.Join(errs...)
}
