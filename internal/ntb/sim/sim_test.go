package sim

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/ntb"
)

// ring makes an enabled fabric of n hosts and closes it at cleanup.
func ring(t *testing.T, cfg Config) *Fabric {
	t.Helper()
	f, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	for _, h := range f.Hosts() {
		for _, p := range h.Ports() {
			require.NoError(t, p.LinkEnable())
		}
	}
	for _, h := range f.Hosts() {
		for _, p := range h.Ports() {
			require.NoError(t, p.WaitLink(time.Second))
		}
	}
	return f
}

// A torus of 3 x 2: every host's four ports face the hosts beside it in
// its row and column, both wrapping round, each link joins the ports the
// fabric says, and a doorbell rung Down arrives at the host below's Up.
func TestTorus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := ring(t, Config{Hosts: 6, Width: 3})
		require.Equal(t, 12, f.Links())
		for k, h := range f.Hosts() {
			row, col := k/3, k%3
			require.Len(t, h.Ports(), 4)
			require.Same(t, f.Host(row*3+(col+1)%3).Left, h.Right.peer(), "host %d", k)
			require.Same(t, f.Host(row*3+(col+2)%3).Right, h.Left.peer(), "host %d", k)
			require.Same(t, f.Host((k+3)%6).Up, h.Down.peer(), "host %d", k)
			require.Same(t, f.Host((k+3)%6).Down, h.Up.peer(), "host %d", k)
			for _, s := range []ntb.Side{ntb.Left, ntb.Right, ntb.Up, ntb.Down} {
				p := *h.port(s)
				require.Equal(t, s, p.Side())
				require.Equal(t, f.LinkOf(k, s), p.Link())
				require.Equal(t, p.Link(), f.LinkOf(p.peer().Host(), p.peer().Side()), "both ends of a link")
			}
		}
		require.NoError(t, f.Host(1).Down.PeerDBSet(1<<3))
		ev := <-f.Host(4).Up.Events()
		for ev.Kind == ntb.LinkEvent {
			ev = <-f.Host(4).Up.Events()
		}
		require.Equal(t, uint64(1<<3), ev.DB)
		f.SetLinkDown(f.LinkOf(4, ntb.Up), true)
		require.False(t, f.Host(1).Down.LinkIsUp())
		require.True(t, f.Host(1).Up.LinkIsUp(), "in a torus of 2 rows, Up and Down are two links")
	})
	for _, c := range []Config{{Hosts: 6, Width: 4}, {Hosts: 6, Width: 6}, {Hosts: 6, Width: 1}} {
		_, err := New(c)
		require.Error(t, err, "%+v", c)
	}
}

func TestParseTopology(t *testing.T) {
	for _, c := range []struct {
		v     string
		n, w  int
		valid bool
	}{
		{"ring", 7, 0, true}, {" Ring ", 2, 0, true},
		{"torus", 16, 4, true}, {"torus", 64, 8, true}, {"torus", 8, 4, true}, {"torus", 12, 4, true}, {"torus", 4, 2, true},
		{"torus:8x2", 16, 8, true}, {"torus:2x8", 16, 2, true},
		{"torus", 7, 0, false}, {"torus", 2, 0, false}, {"torus:4x4", 15, 0, false}, {"torus:1x16", 16, 0, false},
		{"torus:4", 16, 0, false}, {"mesh", 16, 0, false},
	} {
		w, err := ParseTopology(c.v, c.n)
		if !c.valid {
			require.ErrorContains(t, err, "allowed", "%q for %d", c.v, c.n)
			continue
		}
		require.NoError(t, err, "%q for %d", c.v, c.n)
		require.Equal(t, c.w, w, "%q for %d", c.v, c.n)
	}
	require.Equal(t, "torus 4x4", TopologyName(4, 16))
	require.Equal(t, "ring", TopologyName(0, 16))
	c, err := ConfigFromEnv(func(k string) (string, bool) {
		return map[string]string{"GOSHMEM_NTB_SIM_TOPOLOGY": "torus"}[k], k == "GOSHMEM_NTB_SIM_TOPOLOGY"
	}, 16)
	require.NoError(t, err)
	require.Equal(t, 4, c.Width)
	_, err = ConfigFromEnv(func(k string) (string, bool) {
		return map[string]string{"GOSHMEM_NTB_SIM_TOPOLOGY": "torus"}[k], k == "GOSHMEM_NTB_SIM_TOPOLOGY"
	}, 13)
	require.ErrorContains(t, err, "GOSHMEM_NTB_SIM_TOPOLOGY")
}

func TestModels(t *testing.T) {
	// 8 GT/s x 8 lanes, 128b/130b: 7.88 GB/s; 256-byte TLPs: about 7.15.
	require.InDelta(t, 7.877e9, Gen3x8.LinkBytesPerSec, 1e6)
	require.InDelta(t, 7.15e9, Gen3x8.PayloadBytesPerSec(), 0.01e9)
	require.InDelta(t, 4*Gen3x8.LinkBytesPerSec, Gen4x16.LinkBytesPerSec, 1)
	require.Equal(t, int64(256+26), Gen3x8.WireBytes(256))
	require.Equal(t, int64(257+2*26), Gen3x8.WireBytes(257))
	for _, name := range ModelNames {
		m, err := ModelByName(name)
		require.NoError(t, err)
		require.NoError(t, m.validate())
	}
	_, err := ModelByName("gen5x4")
	require.Error(t, err)
	c, err := ConfigFromEnv(func(k string) (string, bool) {
		v, ok := map[string]string{"GOSHMEM_NTB_SIM_MODEL": "gen4x16", "GOSHMEM_NTB_SIM_SEED": "7", "GOSHMEM_NTB_SIM_OP_COST": "1us"}[k]
		return v, ok
	}, 4)
	require.NoError(t, err)
	require.Equal(t, "gen4x16", c.Model.Name)
	require.Equal(t, uint64(7), c.Seed)
	require.Equal(t, time.Microsecond, c.Model.OpCost)
}

// A DMA put costs its set-up, its wire bytes at the link's rate and the
// last write's flight, in virtual time; two flows on one link direction
// share it and end together.
func TestDMATiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := Gen3x8
		f := ring(t, Config{Hosts: 2, Model: m})
		a, b := f.Host(0).Right, f.Host(1).Left
		_, err := b.MWSetTrans(0, 1<<20)
		require.NoError(t, err)
		out, err := a.PeerMW(0)
		require.NoError(t, err)
		src := make([]byte, 256<<10)
		src[0], src[len(src)-1] = 1, 2
		wire := time.Duration(float64(m.WireBytes(len(src))) / m.LinkBytesPerSec * 1e9)
		one := m.DMASetup + m.OpCost + wire + m.PostedWrite

		c0, _ := a.DMA(0)
		start := time.Now()
		require.NoError(t, c0.Submit(out, src, nil))
		require.NoError(t, c0.Wait())
		require.InDelta(t, float64(one), float64(time.Since(start)), 2)
		require.Equal(t, byte(1), out[0])
		require.Equal(t, byte(2), out[len(src)-1])

		c1, _ := a.DMA(1)
		start = time.Now()
		require.NoError(t, c0.Submit(out, src, nil))
		require.NoError(t, c1.Submit(out[len(src):], src, nil))
		require.NoError(t, c0.Wait())
		require.NoError(t, c1.Wait())
		require.InDelta(t, float64(one+wire), float64(time.Since(start)), 4)

		// The other direction is a wire of its own.
		back, err := b.PeerMW(0)
		require.ErrorIs(t, err, ntb.ErrRange) // a translated nothing yet
		require.Nil(t, back)
		require.Equal(t, [2]int64{3 * m.WireBytes(len(src)), 0}, f.LinkBytes(0))
	})
}

// Doorbells land after the model's delays, merge while pending, and a
// masked bit raises its event once unmasked.
func TestDoorbells(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := Gen3x8
		f := ring(t, Config{Hosts: 3, Model: m})
		a, b := f.Host(0).Right, f.Host(1).Left
		for range b.Events() { // the link events of the enabling
			if b.DBRead() == 0 {
				break
			}
		}
		start := time.Now()
		require.NoError(t, a.PeerDBSet(1))
		require.NoError(t, a.PeerDBSet(1))
		ev := <-b.Events()
		require.Equal(t, ntb.Event{Kind: ntb.DoorbellEvent, DB: 1}, ev)
		require.Equal(t, m.OpCost+m.PostedWrite+m.DoorbellIRQ, time.Since(start))
		time.Sleep(time.Millisecond)
		require.Zero(t, len(b.Events()), "two sets of a pending bit are one event")
		require.NoError(t, b.DBClear(1))
		require.NoError(t, b.DBSetMask(2))
		require.NoError(t, a.PeerDBSet(2))
		time.Sleep(time.Millisecond)
		require.Equal(t, uint64(2), b.DBRead())
		select {
		case ev := <-b.Events():
			t.Fatalf("a masked doorbell raised %+v", ev)
		default:
		}
		require.NoError(t, b.DBClearMask(2))
		require.Equal(t, ntb.Event{Kind: ntb.DoorbellEvent, DB: 2}, <-b.Events())
		require.ErrorIs(t, a.PeerDBSet(1<<20), ntb.ErrRange)
	})
}

// A link forced down resets the inbound translations, fails DMA and peer
// access with ErrLinkDown, reads peer scratchpads as all-ones; it comes
// back up when lifted. Scratchpads survive; a peer read costs a round
// trip. A killed host is a dead peer.
func TestLinkDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := ring(t, Config{Hosts: 3})
		a, b := f.Host(0).Right, f.Host(1).Left
		require.NoError(t, b.SpadWrite(3, 42))
		start := time.Now()
		v, err := a.PeerSpadRead(3)
		require.NoError(t, err)
		require.Equal(t, uint32(42), v)
		require.Equal(t, Gen3x8.ReadRoundTrip, time.Since(start))
		_, err = b.MWSetTrans(0, 4096)
		require.NoError(t, err)
		out, err := a.PeerMW(0)
		require.NoError(t, err)

		f.SetLinkDown(0, true)
		require.False(t, a.LinkIsUp())
		require.False(t, b.LinkIsUp())
		c, _ := a.DMA(0)
		require.ErrorIs(t, c.Submit(out, make([]byte, 64), nil), ntb.ErrLinkDown)
		v, err = a.PeerSpadRead(3)
		require.ErrorIs(t, err, ntb.ErrLinkDown)
		require.Equal(t, uint32(0xFFFFFFFF), v)
		require.ErrorIs(t, a.PeerDBSet(1), ntb.ErrLinkDown)

		f.SetLinkDown(0, false)
		require.NoError(t, a.WaitLink(time.Second))
		_, err = a.PeerMW(0)
		require.ErrorIs(t, err, ntb.ErrRange, "translations are reset by a down")
		v, _ = b.SpadRead(3)
		require.Equal(t, uint32(42), v)

		require.False(t, f.Host(2).Left.PeerDead())
		f.Host(1).Kill()
		require.True(t, f.Host(2).Left.PeerDead())
		require.True(t, errors.Is(f.Host(2).Left.WaitLink(time.Millisecond), ntb.ErrLinkDown))
	})
}

// A DMA in flight when the link goes down fails and lands nothing.
func TestDMACut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := ring(t, Config{Hosts: 2})
		a, b := f.Host(0).Right, f.Host(1).Left
		in, err := b.MWSetTrans(0, 1<<20)
		require.NoError(t, err)
		out, _ := a.PeerMW(0)
		c, _ := a.DMA(0)
		src := make([]byte, 1<<20)
		src[0] = 9
		var got error
		require.NoError(t, c.Submit(out, src, func(err error) { got = err }))
		time.Sleep(10 * time.Microsecond)
		f.SetLinkDown(0, true)
		require.ErrorIs(t, c.Wait(), ntb.ErrLinkDown)
		require.ErrorIs(t, got, ntb.ErrLinkDown)
		require.Zero(t, in[0])
	})
}

// Hosts of one job find one fabric by job and tag, made with what
// Prepare said, and it is dropped once all have released it.
func TestAttach(t *testing.T) {
	m := Gen4x16
	Prepare("job", Config{Hosts: 2, Model: m})
	defer Unprepare("job")
	h0, r0, err := Attach("job", "t", 0, Config{Hosts: 2})
	require.NoError(t, err)
	h1, r1, err := Attach("job", "t", 1, Config{Hosts: 2})
	require.NoError(t, err)
	require.Same(t, h0.Right.peer(), h1.Left)
	require.Equal(t, m, h0.f.Model())
	_, _, err = Attach("job", "t", 1, Config{Hosts: 2})
	require.Error(t, err)
	require.Len(t, Fabrics("job"), 1)
	require.NoError(t, r0())
	require.NoError(t, r1())
	require.Empty(t, Fabrics("job"))
}

func BenchmarkDoorbell(b *testing.B) {
	f, err := New(Config{Hosts: 2, Model: Model{Name: "fast", LinkBytesPerSec: 1e12, MaxPayload: 256, LocalCopyBytesPerSec: 1e12}})
	require.NoError(b, err)
	defer f.Close()
	a, p := f.Host(0).Right, f.Host(1).Left
	require.NoError(b, a.LinkEnable())
	require.NoError(b, p.LinkEnable())
	require.NoError(b, a.WaitLink(time.Second))
	for p.DBRead() == 0 && len(p.Events()) > 0 {
		<-p.Events()
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := a.PeerDBSet(1); err != nil {
			b.Fatal(err)
		}
		for ev := range p.Events() {
			if ev.Kind == ntb.DoorbellEvent {
				break
			}
		}
		_ = p.DBClear(1)
	}
}
