package loopback

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/goshmem/goshmem/core"
)

// Name is the provider's registered name.
const Name = "loopback"

// paramSpin is the one setting worth having: how long a waiting PE polls
// before it gives up the CPU. A poll takes about a quarter of a nanosecond
// on the machines this was measured on, so spinSolo polls are a few
// microseconds: longer than a wake-up by a PE on another core takes (well
// under a microsecond), far shorter than the ~80µs the kernel takes to put
// a thread to sleep and wake it. But spinning steals the CPU from the PE
// being waited for when the two share a core: with 8 PEs on 2 cores a ring
// exchange ran 4x slower spinning than not. All of a loopback job's PEs
// are on this host, so "auto" takes the job's policy (core.Waiting),
// which counts them against the CPUs. The spin is the barrier's: a PE
// waiting through core.LocalWaiter has spun in its caller already, and
// WaitChange only yields and sleeps.
var paramSpin = core.NewParam(Name, "SPIN", "auto",
	"polls of its flag before a PE waiting in the barrier yields the CPU and then sleeps in the kernel; "+
		"auto: the job's policy, "+strconv.Itoa(core.SoloPolls)+" if the PEs on the host do not outnumber the CPUs they share (GOSHMEM_CPUS, set by oshrun), else "+
		strconv.Itoa(core.SharedPolls))

// maxSpin bounds the spin at about a millisecond, longer than any wait
// worth spinning through.
const maxSpin = 1 << 22

// spinPolls reads GOSHMEM_LOOPBACK_SPIN, whose "auto" is waiting's Polls.
func spinPolls(cfg *core.Config, waiting core.Waiting) (int, error) {
	v := strings.TrimSpace(cfg.Value(paramSpin))
	if v == "auto" {
		return waiting.Polls, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > maxSpin {
		return 0, &core.EnvError{Var: paramSpin.Env, Value: v,
			Allowed: fmt.Sprintf(`"auto" or an integer from 0 to %d`, maxSpin)}
	}
	return n, nil
}

func init() { core.Register(provider{}) }

type provider struct{}

func (provider) Name() string { return Name }

func (provider) Info() core.Info {
	return core.Info{
		Name:        Name,
		Description: "PEs on one host map each other's symmetric memory from shared files; RMA and atomics are loads and stores",
		Version:     "1",
		Caps: core.CapRMA | core.CapAtomic | core.CapFetchAtomic | core.CapCompareSwap |
			core.CapAtomicFloat | core.CapDirectAccess | core.CapLocalAtomics | core.CapPEQuiet | core.CapBlocks,
		Atomics:  core.FullAtomics(),
		Locality: core.OneHost,
		// Data moves inside the caller's own loads and stores: nothing is
		// ever pending, so nothing needs progressing.
		Progress:   core.ProgressAuto,
		Order:      core.OrderPutPut | core.OrderAtomicAtomic,
		ThreadSafe: true,
		MaxMsgSize: core.Unbounded,
		// Every put copies into the target's memory before it returns, so
		// every put is an inject, whatever its size.
		InjectSize: core.Unbounded,
		Preference: 100,
		Params:     []core.Param{paramSpin, paramFence, paramWake},
		Origin:     "built-in",
	}
}

// fullAtomics is what CheckAtomic checks against; a package variable so the
// fast path passes a pointer without copying or allocating.
var fullAtomics = core.FullAtomics()

// Open joins this PE to the job: it creates and shares the control files
// (see doc.go). Every step that can fail on one PE ends in core.Agree, so
// all PEs return an error together and none waits for a PE that gave up.
func (provider) Open(cfg *core.Config) (core.Domain, error) {
	b := cfg.Bootstrap
	if b == nil {
		return nil, fmt.Errorf("no bootstrap in the configuration: %w", core.ErrInvalid)
	}
	d := &domain{
		rank:      b.Rank(),
		npes:      b.Size(),
		boot:      b,
		dir:       cfg.JobDir(),
		endpoints: map[*endpoint]struct{}{},
	}
	var (
		spin    int
		asym    bool
		poller  bool
		waiting core.Waiting
	)
	cpus, err := cfg.CPUs()
	if err == nil {
		waiting, err = cfg.Wait()
	}
	if err == nil {
		spin, err = spinPolls(cfg, waiting)
	}
	if err == nil {
		asym, err = wantAsymmetric(cfg)
	}
	if err == nil {
		poller, err = wantPoller(cfg)
	}
	if poller {
		// The asymmetric fence makes a waiter run membarrier before
		// every sleep, and one that sleeps in the poller sleeps at every
		// wait: the writers' atomic add measured faster (wake.go).
		asym = false
	}
	if err == nil {
		_, err = cfg.MakeJobDir()
	}
	if err := core.Agree(b, err); err != nil {
		return nil, err
	}
	d.spin = spin

	// One exchange tells every PE whether the job fits on one host,
	// whether every PE can fence asymmetrically and whether every PE has
	// a CPU of its own (which barrier to use), and gives the domain an
	// id: PE 0's random number. The id goes into every file name, so two
	// domains of one job (or two jobs that share an id) never race for the
	// same names.
	host := cfg.HostID
	if host == "" {
		host = core.HostID(cfg.Lookup)
	}
	msg := binary.LittleEndian.AppendUint64(nil, rand.Uint64())
	all, err := b.Allgather(append(append(msg, flag(asym), flag(d.npes <= cpus), flag(poller)), host...))
	if err != nil {
		return nil, fmt.Errorf("exchange of host ids: %w", err)
	}
	if err := sameHost(all); err != nil {
		return nil, err
	}
	if d.asym, err = allAsymmetric(all); err != nil {
		return nil, err
	}
	if d.dissemination, err = allSet(all, barrierOff, "barrier flag"); err != nil {
		return nil, err
	}
	pipes, err := anyPoller(all)
	if err != nil {
		return nil, err
	}
	d.id = binary.LittleEndian.Uint64(all[0])
	d.prefix = fmt.Sprintf("%016x", d.id)

	want := ctlHeader{Version: ctlVersion, NPEs: uint32(d.npes), CtlSize: ctlSize,
		JobHash: jobHash(cfg.JobID), Domain: d.id}
	ctls, err := d.share("control file", "ctl", ctlSize,
		func(m []byte) {
			h := want
			h.Rank = uint32(d.rank)
			h.encode(m)
			binary.NativeEndian.PutUint32(m[offBarMode:], uint32(flag(d.dissemination)))
		},
		func(pe int, m []byte) error {
			h, err := decodeHeader(m)
			if err == nil {
				w := want
				w.Rank = uint32(pe)
				err = h.check(w)
			}
			if mode := binary.NativeEndian.Uint32(m[offBarMode:]); err == nil && mode != uint32(flag(d.dissemination)) {
				err = fmt.Errorf("control file names barrier mode %d, want %d", mode, flag(d.dissemination))
			}
			return err
		})
	if err != nil {
		return nil, err
	}
	d.ctl = make([]peerCtl, d.npes)
	for pe, m := range ctls {
		d.ctl[pe] = newPeerCtl(m)
	}
	d.self = &d.ctl[d.rank]
	if pipes {
		if d.pw, err = d.openWake(); err != nil {
			return nil, errors.Join(err, unmapAll(ctls))
		}
		d.pollSleep = poller
	}
	domainsHere.Add(1)
	return d, nil
}

// Each PE's part of Open's exchange: 8 bytes of random id, a fence flag
// at fenceOff, a barrier flag at barrierOff, a wake flag at wakeOff
// (sleeps in the poller), then the host id from hostOff to the end.
const (
	fenceOff   = 8
	barrierOff = 9
	wakeOff    = 10
	hostOff    = 11
)

// flag encodes a yes or no of Open's exchange.
func flag(yes bool) byte {
	if yes {
		return 1
	}
	return 0
}

// allSet reads the flag at off, named what, of every PE's part of Open's
// exchange (after sameHost checked its length): whether all say yes.
func allSet(all [][]byte, off int, what string) (bool, error) {
	yes := true
	for pe, m := range all {
		switch m[off] {
		case 0:
			yes = false
		case 1:
		default:
			return false, fmt.Errorf("PE %d sent %s %d, not 0 or 1: %w", pe, what, m[off], core.ErrInvalid)
		}
	}
	return yes, nil
}

// sameHost checks the Allgather of Open (8 bytes of id, three flags, then
// the host id) and names the PEs that run elsewhere than PE 0.
func sameHost(all [][]byte) error {
	for pe, m := range all {
		if len(m) < hostOff {
			return fmt.Errorf("PE %d sent a malformed host exchange of %d bytes: %w", pe, len(m), core.ErrInvalid)
		}
	}
	host0 := string(all[0][hostOff:])
	var other []string
	for pe, m := range all {
		if h := string(m[hostOff:]); h != host0 {
			other = append(other, fmt.Sprintf("PE %d on %q", pe, h))
		}
	}
	if len(other) == 0 {
		return nil
	}
	const show = 8
	if n := len(other); n > show {
		other = append(other[:show:show], fmt.Sprintf("%d more", n-show))
	}
	return fmt.Errorf("%s serves PEs on one host, but PE 0 is on %q and %s: %w",
		Name, host0, strings.Join(other, ", "), core.ErrNotSupported)
}
