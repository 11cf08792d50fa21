package emu

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/ntb"
	"github.com/goshmem/goshmem/internal/sys"
)

// memory is host memory registered with the device: a shared file in the
// ring's directory, so that a window pointed at it (MWSetTransMem) is a
// second name of the same file, which the peer maps as any window.
type memory struct {
	b    []byte // the whole mapping, a multiple of a page
	n    int    // the size asked for
	path string
	// adopted: b was the host's before (AdoptMemory), and stays mapped;
	// joined: b is a view of another lane's (JoinMemory), whose file is
	// that lane's to remove.
	adopted, joined bool
	once            sync.Once
	err             error
}

var _ ntb.Memory = (*memory)(nil)

func (m *memory) Bytes() []byte { return m.b[:m.n] }

// Close retires the memory (sys.Retire: it holds a region a program may
// keep slices of) and removes its file; windows pointed at it keep their
// own names until they are cleared.
func (m *memory) Close() error {
	m.once.Do(func() {
		if m.joined {
			return
		}
		if m.adopted {
			m.err = ignoreNotExist(os.Remove(m.path))
			return
		}
		m.err = errors.Join(sys.Retire(m.b), ignoreNotExist(os.Remove(m.path)))
	})
	return m.err
}

func ignoreNotExist(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// NewMemory registers size bytes of zeroed host memory that inbound
// windows of either of the host's ports can be pointed at. Its file is
// removed by Close, or with the ring's directory after a crash.
func (h *Host) NewMemory(size int) (ntb.Memory, error) {
	if size <= 0 {
		return nil, fmt.Errorf("ntb emu: host %d: memory of %d bytes: %w", h.ID, size, core.ErrInvalid)
	}
	h.mu.Lock()
	h.memGen++
	gen := h.memGen
	h.mu.Unlock()
	path := filepath.Join(h.dir, fmt.Sprintf("%shost%d-mem%d", filePrefix(h.tag), h.ID, gen))
	rounded := (size + mwAlign - 1) / mwAlign * mwAlign
	b, err := sys.CreateShared(path, rounded)
	if err != nil {
		return nil, fmt.Errorf("ntb emu: host %d: memory of %s: %w", h.ID, core.FormatSize(int64(size)), errors.Join(err, core.ErrNoMemory))
	}
	return &memory{b: b, n: size, path: path}, nil
}

// MWSetTransMem points inbound window i at m, which must come from
// NewMemory of this port's host.
func (p *Port) MWSetTransMem(i int, m ntb.Memory) error {
	w := &p.win
	if err := w.checkIndex("set window translation", i); err != nil {
		return err
	}
	defer p.leave()
	mm, ok := m.(*memory)
	if !ok {
		return p.errorf(ntb.ErrRange, "set window %d translation: memory %T was not registered with this device", i, m)
	}
	if int64(len(mm.b)) > int64(p.hdr.MWMax) {
		return p.errorf(ntb.ErrRange, "set window %d translation of %s: windows are at most %s (GOSHMEM_NTB_MW_SIZE)",
			i, core.FormatSize(int64(len(mm.b))), core.FormatSize(int64(p.hdr.MWMax)))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.clearLocked(i); err != nil {
		return err
	}
	w.gen++
	path := w.path(p.side, i, w.gen)
	if err := os.Link(mm.path, path); err != nil {
		return p.errorf(err, "set window %d translation", i)
	}
	w.in[i] = path
	p.own.setWindow(i, window{Gen: w.gen, Size: uint64(len(mm.b))})
	return nil
}

// adoptedPath names the file of the memory that lane's PE of this host
// adopted as region region (AdoptMemory), for the host's other PEs.
func (h *Host) adoptedPath(lane, region int) string {
	return filepath.Join(h.dir, fmt.Sprintf("ntb-%slane%d-host%d-region%d", h.devTag, lane, h.ID, region))
}

// AdoptMemory registers memory the host already has with the device: b,
// region region of the PE holding lane lane, moves in place onto a shared
// file of the device (sys.ShareInPlace: same address, same contents), as
// a driver pins a buffer it did not allocate. The host's other PEs then
// map their views of b onto it (JoinMemory). b must be whole pages from a
// page boundary. Close removes the file's name and leaves b mapped: the
// mapping belongs to whoever owned b.
func (h *Host) AdoptMemory(lane, region int, b []byte) (ntb.Memory, error) {
	path := h.adoptedPath(lane, region)
	if err := sys.ShareInPlace(path, b); err != nil {
		return nil, fmt.Errorf("ntb emu: host %d lane %d: register region %d's memory of %s: %w",
			h.ID, lane, region, core.FormatSize(int64(len(b))), err)
	}
	return &memory{b: b, n: len(b), path: path, adopted: true}, nil
}

// JoinMemory maps this process's view b of the memory that lane's PE of
// this host registered with AdoptMemory onto the device's file of it, in
// place, so that what the neighbours put through a window onto it is
// what b reads, and returns it as memory this lane's windows can be
// pointed at too. The mapping belongs to whoever owned b; Close does
// nothing.
func (h *Host) JoinMemory(lane, region int, b []byte) (ntb.Memory, error) {
	path := h.adoptedPath(lane, region)
	if err := sys.MapSharedAt(path, b); err != nil {
		return nil, fmt.Errorf("ntb emu: host %d: map lane %d's region %d: %w", h.ID, lane, region, err)
	}
	return &memory{b: b, n: len(b), path: path, joined: true}, nil
}
