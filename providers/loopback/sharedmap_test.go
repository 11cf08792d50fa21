package loopback

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/sys"
)

// The offsets of PROTOCOL.md, written out again from the document rather
// than taken from ctl.go, so that a change of the layout that the document
// (and the C fast path built from it) does not follow fails here.
const (
	docWaiters    = 128
	docAnyWaiters = 132
	docWatchMask  = 136
	docSeq        = 256
	docSleepers   = 260
	docWatches    = 384
	docSlots      = 16
	docCtlSize    = 3072
	docBarEpoch   = 2944
	docBarMode    = 2948
)

func TestProtocolLayoutIsDocumented(t *testing.T) {
	require.Equal(t, docWaiters, offWaiters)
	require.Equal(t, docAnyWaiters, offAnyWaiters)
	require.Equal(t, docWatchMask, offWatchMask)
	require.Equal(t, docSeq, offSeq)
	require.Equal(t, docSleepers, offSleepers)
	require.Equal(t, docWatches, offWatches)
	require.Equal(t, docSlots, watchSlots)
	require.Equal(t, docCtlSize, ctlSize)
	require.Equal(t, 640, offBarCount)
	require.Equal(t, 768, offBarGen)
	require.Equal(t, 772, offBarSleepers)
	require.Equal(t, 896, offBarFlags)
	require.Equal(t, docBarEpoch, offBarEpoch)
	require.Equal(t, docBarMode, offBarMode)
	require.Equal(t, 8, ProtocolVersion, "PROTOCOL.md documents version 8: update it with the layout")
}

// TestProtocolMatchesC compares the C fast path's copy of the layout
// (capi/fast.h, GSH_LOOP_* macros) with this one, so the two sides of the
// protocol cannot drift apart silently.
func TestProtocolMatchesC(t *testing.T) {
	f, err := os.Open("../../capi/fast.h")
	if os.IsNotExist(err) {
		t.Skip("no capi/fast.h in this tree")
	}
	require.NoError(t, err)
	defer f.Close()
	def := regexp.MustCompile(`^#define\s+GSH_LOOP_(\w+)\s+\(?(0x[0-9a-fA-F]+|\d+)U?L*\)?`)
	got := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := def.FindStringSubmatch(sc.Text()); m != nil {
			v, err := strconv.ParseUint(m[2], 0, 64)
			require.NoError(t, err, m[0])
			got[m[1]] = v
		}
	}
	require.NoError(t, sc.Err())
	want := map[string]uint64{
		"VERSION":      ctlVersion,
		"WAITERS":      offWaiters,
		"ANY_WAITERS":  offAnyWaiters,
		"WATCH_MASK":   offWatchMask,
		"SEQ":          offSeq,
		"SLEEPERS":     offSleepers,
		"WATCHES":      offWatches,
		"WATCH_SLOTS":  watchSlots,
		"SEQ_STEP":     seqStep,
		"OFF_BITS":     watchOffBits,
		"PAGE_SHIFT":   pageShift,
		"SUMMARY_MAX":  summaryPages,
		"CTL_SIZE":     ctlSize,
		"HASH":         0x9e3779b97f4a7c15,
		"BAR_COUNT":    offBarCount,
		"BAR_GEN":      offBarGen,
		"BAR_SLEEPERS": offBarSleepers,
		"BAR_FLAGS":    offBarFlags,
		"BAR_EPOCH":    offBarEpoch,
		"BAR_MODE":     offBarMode,
		"BAR_ROUNDS":   barRounds,
	}
	for name, v := range want {
		g, ok := got[name]
		if !ok {
			continue // the C side need not name every word
		}
		require.Equal(t, v, g, "GSH_LOOP_%s", name)
	}
	for _, name := range []string{"VERSION", "WAITERS", "WATCH_MASK", "SEQ", "SLEEPERS", "WATCHES"} {
		require.Contains(t, got, name, "capi/fast.h names GSH_LOOP_%s", name)
	}
}

// TestSharedMap: the domain offers its control files, region numbers and
// fence mode as the protocol says, and nothing after Close.
func TestSharedMap(t *testing.T) {
	t.Parallel()
	for _, fence := range []string{"auto", "atomic"} {
		t.Run(fence, func(t *testing.T) {
			t.Parallel()
			j := newJob(t, 3)
			j.env[paramFence.Env] = fence
			prov, err := core.Lookup(Name)
			require.NoError(t, err)
			j.runRaw(func(p *peT) {
				d, err := prov.Open(j.cfg(p.rank))
				require.NoError(p, err)
				p.dom = d.(*domain)
				sm, ok := d.(core.SharedMap)
				require.True(p, ok)
				name, version := sm.SharedProtocol()
				require.Equal(p, "goshmem-loopback", name)
				require.Equal(p, 8, version)
				require.Equal(p, !p.dom.asym, sm.WritersFence())
				if fence == "atomic" {
					require.True(p, sm.WritersFence())
				}
				for pe := range p.n {
					c := sm.ControlWords(pe)
					require.Len(p, c, docCtlSize)
					require.Equal(p, "GSHMLOOP", string(c[:8]))
					require.Equal(p, uint32(version), binary.LittleEndian.Uint32(c[8:]))
					require.Equal(p, uint32(pe), binary.LittleEndian.Uint32(c[12:]))
					require.Equal(p, uint32(flag(p.dom.dissemination)), binary.NativeEndian.Uint32(c[docBarMode:]))
				}
				require.Nil(p, sm.ControlWords(-1))
				require.Nil(p, sm.ControlWords(p.n))

				r0, err := d.NewRegion(4096)
				require.NoError(p, err)
				r1, err := d.NewRegion(0)
				require.NoError(p, err)
				r2, err := d.NewRegion(8192)
				require.NoError(p, err)
				require.Equal(p, 0, sm.RegionIndex(r0))
				require.Equal(p, 1, sm.RegionIndex(r1))
				require.Equal(p, 2, sm.RegionIndex(r2))
				require.Equal(p, -1, sm.RegionIndex(nil))
				require.NoError(p, d.Close())
				require.Nil(p, sm.ControlWords(0))
			})
		})
	}
}

// foreignWriter is a writer that follows PROTOCOL.md with nothing of the
// provider but the map: it stands for another implementation (the C fast
// path) and must wake the provider's waiters.
type foreignWriter struct {
	ctl   [][]byte
	fence bool
	scrap atomic.Uint32 // a word of its own for the fence's read-modify-write
}

func newForeignWriter(sm core.SharedMap, npes int) *foreignWriter {
	w := &foreignWriter{ctl: make([][]byte, npes), fence: sm.WritersFence()}
	for pe := range w.ctl {
		w.ctl[pe] = sm.ControlWords(pe)
	}
	return w
}

func docBits(lo, hi uint64) uint64 {
	first, last := lo>>12, (hi-1)>>12
	if last-first >= 8 {
		return ^uint64(0)
	}
	var m uint64
	for p := first; p <= last; p++ {
		m |= 1 << (p * 0x9e3779b97f4a7c15 >> 58)
	}
	return m
}

// put copies src to off of region idx on pe, whose part is mapped at dst,
// and tells pe's waiters.
func (w *foreignWriter) put(dst []byte, pe, idx, off int, src []byte) {
	copy(dst[off:], src)
	if w.fence {
		w.scrap.Add(0)
	}
	c := w.ctl[pe]
	if atomic.LoadUint32(mem.Word32(c, docWaiters)) == 0 {
		return
	}
	lo, hi := uint64(idx)<<48|uint64(off), uint64(idx)<<48|uint64(off+len(src))
	if atomic.LoadUint64(mem.Word64(c, docWatchMask))&docBits(lo, hi) == 0 {
		return
	}
	watched := atomic.LoadUint32(mem.Word32(c, docAnyWaiters)) != 0
	for s := 0; s < docSlots && !watched; s++ {
		sh := atomic.LoadUint64(mem.Word64(c, docWatches+16*s+8))
		watched = sh != 0 && lo < sh && atomic.LoadUint64(mem.Word64(c, docWatches+16*s)) < hi
	}
	if !watched {
		return
	}
	seq := mem.Word32(c, docSeq)
	atomic.AddUint32(seq, 2)
	if atomic.LoadUint32(mem.Word32(c, docSleepers)) != 0 {
		_, _ = sys.FutexWake(seq, sys.WakeAll)
	}
}

// TestForeignWriterWakesSleeper: a writer that knows only PROTOCOL.md wakes
// a provider's waiter asleep in the futex, watching a range or anything,
// in both fence modes, and leaves alone a waiter whose range it misses.
func TestForeignWriterWakesSleeper(t *testing.T) {
	t.Parallel()
	for _, fence := range []string{"auto", "atomic"} {
		for _, ranged := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/ranged=%v", fence, ranged), func(t *testing.T) {
				t.Parallel()
				j := newJob(t, 2)
				j.env[paramFence.Env] = fence
				j.env["GOSHMEM_LOOPBACK_SPIN"] = "0"
				const rounds = 20
				j.run(func(p *peT) {
					_, err := p.dom.NewRegion(4096) // so the region used is number 1, not 0
					require.NoError(p, err)
					r, err := p.dom.NewRegion(1 << 16)
					require.NoError(p, err)
					sm := core.SharedMap(p.dom)
					idx := sm.RegionIndex(r)
					require.Equal(p, 1, idx)
					const off = 40960 // a page of its own, far from off 0
					p.barrier()
					for round := uint64(1); round <= rounds; round++ {
						switch p.rank {
						case 1:
							w := core.LocalWaiter(p.dom)
							word := mem.Word64(r.Local(), off)
							var seq uint32
							var watch int
							if ranged {
								seq, watch = w.WaitArm(r, off, 8)
							} else {
								seq, watch = w.WaitArm(nil, 0, 0)
							}
							p.barrier() // armed
							lost := 0
							for atomic.LoadUint64(word) != round {
								slept := seq&settled != 0 || !p.dom.asym
								got := w.WaitChange(seq, 5*time.Second)
								if slept && got == seq|settled && atomic.LoadUint64(word) != round {
									lost++
								}
								seq = got
							}
							w.WaitDisarm(watch)
							require.Zero(p, lost, "round %d: a sleep ran out instead of being woken", round)
						case 0:
							fw := newForeignWriter(sm, p.n)
							peer := sm.PeerBytes(1, r)
							p.barrier() // PE 1 armed
							// A write elsewhere in the region: a ranged waiter
							// must not be woken by it (seq stays).
							before := atomic.LoadUint32(mem.Word32(fw.ctl[1], docSeq))
							fw.put(peer, 1, idx, 8, []byte{1, 2, 3})
							after := atomic.LoadUint32(mem.Word32(fw.ctl[1], docSeq))
							if ranged {
								require.Equal(p, before, after, "a write outside the watched range bumped seq")
							} else {
								require.Equal(p, before+2, after)
							}
							// Write only once PE 1 sleeps in the kernel.
							waitFor(func() bool { return atomic.LoadUint32(mem.Word32(fw.ctl[1], docSleepers)) != 0 })
							var v [8]byte
							binary.NativeEndian.PutUint64(v[:], round)
							fw.put(peer, 1, idx, off, v[:])
						}
						p.barrier()
					}
				})
			})
		}
	}
}
