package sim

import (
	"errors"
	"fmt"
	"sync"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/ntb"
	"github.com/goshmem/goshmem/internal/sys"
)

// Config describes a simulated fabric.
type Config struct {
	// Hosts is the fabric's size, 2 or more.
	Hosts int
	// Width is, for a 2D torus, the hosts in each row: host r*Width+c is
	// in row r and column c, with four ports: Left and Right along the
	// row, Up and Down along the column (both wrap round). 0 makes a
	// ring, each host with a Left and a Right port.
	Width int
	// Model is the device model; the zero Model means Gen3x8.
	Model Model
	// Seed drives every random draw of the fabric (SetupJitter).
	Seed uint64
	// Windows is the number of memory windows per port (0: 2).
	Windows int
	// MWMax is the largest window translation (0: 1 GiB).
	MWMax int64
}

// The device's geometry, as the emulator's (internal/ntb/emu).
const (
	spadCount   = 8
	dbBits      = 16
	dmaChannels = 4
	mwAlign     = 4096
	maxWindows  = 8
)

// Fabric is a simulated ring or torus of hosts. In a ring, host k's
// Right port and host k+1's Left port are the two ends of link k. In a
// torus, link 2k joins host k's Right port to the Left port of the next
// host of its row, and link 2k+1 host k's Down port to the Up port of
// the host below it.
type Fabric struct {
	cfg   Config
	hosts []*Host
	links []*link
}

// Host is one host of a fabric: its ports, two in a ring (Up and Down
// are nil) and four in a torus.
type Host struct {
	f                     *Fabric
	id                    int
	Left, Right, Up, Down *Port
	killed                bool // under the fabric's links' locks: see Kill
	closeOnce             sync.Once
}

// New makes a fabric of cfg.Hosts hosts; every port starts with its link
// disabled.
func New(cfg Config) (*Fabric, error) {
	if cfg.Model == (Model{}) {
		cfg.Model = Gen3x8
	}
	if cfg.Windows == 0 {
		cfg.Windows = 2
	}
	if cfg.MWMax == 0 {
		cfg.MWMax = 1 << 30
	}
	switch {
	case cfg.Hosts < 2:
		return nil, fmt.Errorf("ntb sim: a ring of %d hosts: at least 2: %w", cfg.Hosts, core.ErrInvalid)
	case cfg.Width != 0 && (cfg.Width < 2 || cfg.Hosts%cfg.Width != 0 || cfg.Hosts/cfg.Width < 2):
		return nil, fmt.Errorf("ntb sim: a torus of %d hosts in rows of %d: rows of 2 or more hosts that divide the hosts into 2 or more rows: %w",
			cfg.Hosts, cfg.Width, core.ErrInvalid)
	case cfg.Windows < 2 || cfg.Windows > maxWindows:
		return nil, fmt.Errorf("ntb sim: %d windows: allowed 2 to %d: %w", cfg.Windows, maxWindows, core.ErrInvalid)
	case cfg.MWMax < mwAlign || cfg.MWMax%mwAlign != 0:
		return nil, fmt.Errorf("ntb sim: window size %d: a multiple of %d: %w", cfg.MWMax, mwAlign, core.ErrInvalid)
	}
	if err := cfg.Model.validate(); err != nil {
		return nil, err
	}
	f := &Fabric{cfg: cfg}
	for k := range cfg.Hosts {
		f.hosts = append(f.hosts, &Host{f: f, id: k})
	}
	join := func(a *Host, as ntb.Side, b *Host, bs ntb.Side) {
		l := &link{f: f, k: len(f.links), changed: make(chan struct{})}
		for d := range l.wires {
			l.wires[d] = newWire(cfg.Model.LinkBytesPerSec)
		}
		l.ends[0] = newPort(f, a, l, 0, as)
		l.ends[1] = newPort(f, b, l, 1, bs)
		*a.port(as), *b.port(bs) = l.ends[0], l.ends[1]
		f.links = append(f.links, l)
	}
	for k, h := range f.hosts {
		if cfg.Width == 0 {
			join(h, ntb.Right, f.hosts[(k+1)%cfg.Hosts], ntb.Left)
			continue
		}
		w := cfg.Width
		row, col := k/w, k%w
		join(h, ntb.Right, f.hosts[row*w+(col+1)%w], ntb.Left)
		join(h, ntb.Down, f.hosts[(k+w)%cfg.Hosts], ntb.Up)
	}
	return f, nil
}

// port is where the host keeps its port on side s.
func (h *Host) port(s ntb.Side) **Port {
	switch s {
	case ntb.Left:
		return &h.Left
	case ntb.Right:
		return &h.Right
	case ntb.Up:
		return &h.Up
	}
	return &h.Down
}

// Ports is the host's ports: Left and Right, and in a torus Up and Down.
func (h *Host) Ports() []*Port {
	if h.Up == nil {
		return []*Port{h.Left, h.Right}
	}
	return []*Port{h.Left, h.Right, h.Up, h.Down}
}

// Fabric is the fabric the host is part of.
func (h *Host) Fabric() *Fabric { return h.f }

// Width is the hosts in each row of a torus, 0 for a ring.
func (f *Fabric) Width() int { return f.cfg.Width }

// Links is the fabric's links: as many as hosts in a ring, twice as many
// in a torus.
func (f *Fabric) Links() int { return len(f.links) }

// LinkOf is the index of the link on side s of host h.
func (f *Fabric) LinkOf(h int, s ntb.Side) int { return (*f.hosts[h].port(s)).l.k }

// Model is the fabric's device model.
func (f *Fabric) Model() Model { return f.cfg.Model }

// Hosts is the fabric's hosts by id.
func (f *Fabric) Hosts() []*Host { return f.hosts }

// Host returns host h.
func (f *Fabric) Host(h int) *Host { return f.hosts[h] }

// SetLinkDown forces link k down (true) or lets it come up again (false):
// both ends see the link change, and a link that goes down loses its
// inbound translations.
func (f *Fabric) SetLinkDown(k int, down bool) {
	l := f.links[k]
	l.mu.Lock()
	l.forced = down
	l.update()
	l.mu.Unlock()
}

// LinkBytes is the wire bytes link k carried so far in each direction:
// [0] from the link's first end (in a ring, host k's Right port; in a
// torus, host k/2's Right or Down port) to its second, [1] back.
func (f *Fabric) LinkBytes(k int) [2]int64 {
	l := f.links[k]
	return [2]int64{l.wires[0].carried(), l.wires[1].carried()}
}

// Close closes every port.
func (f *Fabric) Close() error {
	for _, h := range f.hosts {
		_ = h.Close()
	}
	return nil
}

// ID is the host's index in the ring.
func (h *Host) ID() int { return h.id }

// Close closes the host's ports; the neighbours see their links go down.
func (h *Host) Close() error {
	h.closeOnce.Do(func() {
		for _, p := range h.Ports() {
			_ = p.Close()
		}
	})
	return nil
}

// Kill makes the host die: its links go down, and its neighbours'
// PeerDead reports true.
func (h *Host) Kill() {
	for _, p := range h.Ports() {
		p.l.mu.Lock()
		h.killed = true
		p.l.update()
		p.l.mu.Unlock()
	}
	_ = h.Close()
}

// memory is host memory a window can point at: b, in a mapping of whole
// pages, win, that a window onto it covers. The mapping is internal/sys's,
// aligned as core.Region promises a region's memory is.
type memory struct {
	b, win []byte
	once   sync.Once
}

func (m *memory) Bytes() []byte { return m.b }

// Close unmaps the memory: the windows pointed at it must be cleared or
// their ports closed first, as ntb.Memory says.
func (m *memory) Close() error {
	var err error
	m.once.Do(func() { err = sys.Unmap(m.win) })
	return err
}

// NewMemory is memory of size bytes, rounded up to the windows'
// alignment, that inbound windows can be pointed at (MWSetTransMem).
func (h *Host) NewMemory(size int) (ntb.Memory, error) {
	if size <= 0 || int64(size) > h.f.cfg.MWMax {
		return nil, fmt.Errorf("ntb sim: memory of %d bytes: 1 to %d: %w", size, h.f.cfg.MWMax, ntb.ErrRange)
	}
	win, err := sys.MapPrivate((size + mwAlign - 1) / mwAlign * mwAlign)
	if err != nil {
		return nil, fmt.Errorf("ntb sim: memory of %d bytes: %w", size, errors.Join(err, core.ErrNoMemory))
	}
	return &memory{b: win[:size], win: win}, nil
}

// link is one link of the fabric and the state its two ends share.
type link struct {
	f     *Fabric
	k     int
	wires [2]*wire // [0]: from end 0 (host k's Right) to end 1

	mu      sync.Mutex
	ends    [2]*Port
	forced  bool
	up      bool
	epoch   uint64        // bumped on every down
	changed chan struct{} // closed and replaced on every change of up
}

// update recomputes up from both ends; on a change it tells both ends,
// and on a down resets the inbound translations. Under l.mu.
func (l *link) update() {
	up := !l.forced
	for _, p := range l.ends {
		up = up && p.enabled && !p.closed && !p.host.killed
	}
	if up == l.up {
		return
	}
	l.up = up
	if !up {
		l.epoch++
		for _, p := range l.ends {
			clear(p.inbound)
		}
	}
	close(l.changed)
	l.changed = make(chan struct{})
	for _, p := range l.ends {
		p.postLink()
	}
}
