package emu

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/ntb"
)

func TestRingTopology(t *testing.T) {
	r := newRing(t, 3, fastOptions())
	for id, h := range r.Hosts {
		require.Equal(t, id, h.ID)
		require.Equal(t, id, h.Right.Link())
		require.Equal(t, (id+2)%3, h.Left.Link())
		require.Equal(t, ntb.Left, h.Left.Side())
		require.Same(t, h.Right, h.Port(ntb.Right))
		require.True(t, h.Left.LinkIsUp())
	}
	// A scratchpad written by host 1's Right port is host 2's Left port's peer's.
	require.NoError(t, r.Hosts[1].Right.SpadWrite(3, 42))
	v, err := r.Hosts[2].Left.PeerSpadRead(3)
	require.NoError(t, err)
	require.Equal(t, uint32(42), v)
	v, err = r.Hosts[0].Right.PeerSpadRead(3)
	require.NoError(t, err)
	require.Zero(t, v, "host 0 faces host 1's Left port, not its Right")
}

func TestScratchpads(t *testing.T) {
	a, b := pair(newRing(t, 2, fastOptions()))
	require.Equal(t, 8, a.SpadCount())
	require.NoError(t, a.PeerSpadWrite(7, 0xdead))
	v, err := b.SpadRead(7)
	require.NoError(t, err)
	require.Equal(t, uint32(0xdead), v)
	v, err = a.SpadRead(7)
	require.NoError(t, err)
	require.Zero(t, v, "a peer write lands on the peer's side only")

	for _, i := range []int{-1, 8} {
		_, err = a.SpadRead(i)
		require.ErrorIs(t, err, ntb.ErrRange)
		require.ErrorIs(t, a.SpadWrite(i, 1), ntb.ErrRange)
		v, err = a.PeerSpadRead(i)
		require.ErrorIs(t, err, ntb.ErrRange)
		require.Equal(t, uint32(math.MaxUint32), v)
		require.ErrorIs(t, a.PeerSpadWrite(i, 1), ntb.ErrRange)
	}
	s := a.Stats()
	require.Equal(t, uint64(1), s.PeerSpadWrites)
	require.Equal(t, uint64(1), s.SpadReads)
}

func TestDoorbellEvent(t *testing.T) {
	a, b := pair(newRing(t, 2, fastOptions()))
	require.Equal(t, uint64(0xffff), b.DBValidMask())
	require.NoError(t, a.PeerDBSet(1<<3))
	e := nextEvent(t, b, ntb.DoorbellEvent)
	require.Equal(t, uint64(1<<3), e.DB)
	require.Equal(t, uint64(1<<3), b.DBRead())
	require.NoError(t, b.DBClear(1<<3))
	require.Zero(t, b.DBRead())
	require.ErrorIs(t, a.PeerDBSet(1<<16), ntb.ErrRange)
	require.ErrorIs(t, b.DBClear(1<<20), ntb.ErrRange)
}

func TestDoorbellMaskRaisesOnUnmask(t *testing.T) {
	a, b := pair(newRing(t, 2, fastOptions()))
	require.NoError(t, b.DBSetMask(0b110))
	require.Equal(t, uint64(0b110), b.DBReadMask())
	require.NoError(t, a.PeerDBSet(0b010))
	noEvent(t, b, ntb.DoorbellEvent, 30*time.Millisecond)
	require.Equal(t, uint64(0b010), b.DBRead(), "a masked bit stays pending")
	require.NoError(t, b.DBClearMask(0b010))
	e := nextEvent(t, b, ntb.DoorbellEvent)
	require.Equal(t, uint64(0b010), e.DB, "unmasking a pending bit raises it")
	require.Equal(t, uint64(0b100), b.DBReadMask())
}

func TestDoorbellBitsMerge(t *testing.T) {
	a, b := pair(newRing(t, 2, fastOptions()))
	// Nobody reads events while the peer rings: the bits merge.
	require.NoError(t, b.DBSetMask(1))
	require.NoError(t, a.PeerDBSet(1<<4))
	require.NoError(t, a.PeerDBSet(1<<5))
	require.NoError(t, a.PeerDBSet(1<<4))
	require.NoError(t, a.PeerDBSet(1<<6))
	require.Eventually(t, func() bool { return b.DBRead() == 0b111<<4 }, 10*time.Second, time.Millisecond)
	var got uint64
	for got != 0b111<<4 {
		got |= nextEvent(t, b, ntb.DoorbellEvent).DB
	}
	// A bit already reported and not cleared raises nothing new.
	require.NoError(t, a.PeerDBSet(1<<4))
	noEvent(t, b, ntb.DoorbellEvent, 30*time.Millisecond)
	// Once cleared, it does.
	require.NoError(t, b.DBClear(1<<4))
	require.NoError(t, a.PeerDBSet(1<<4))
	require.Equal(t, uint64(1<<4), nextEvent(t, b, ntb.DoorbellEvent).DB)
	require.Equal(t, uint64(6), a.Stats().DoorbellsSent)
}

func TestWindows(t *testing.T) {
	a, b := pair(newRing(t, 2, fastOptions()))
	require.Equal(t, 2, b.MWCount())
	require.Equal(t, 2, a.PeerMWCount())
	addr, sz, max, err := b.MWAlign(1)
	require.NoError(t, err)
	require.Equal(t, []int64{4096, 4096, 16 << 20}, []int64{addr, sz, max})

	_, err = a.PeerMW(1)
	require.ErrorIs(t, err, ntb.ErrRange, "no translation yet")
	buf, err := b.MWSetTrans(1, 8192)
	require.NoError(t, err)
	require.Len(t, buf, 8192)
	out, err := a.PeerMW(1)
	require.NoError(t, err)
	require.Len(t, out, 8192)
	copy(out[100:], "through the bridge")
	require.Equal(t, "through the bridge", string(buf[100:118]))

	// A new translation is a new buffer; the peer maps it anew.
	buf2, err := b.MWSetTrans(1, 4096)
	require.NoError(t, err)
	out2, err := a.PeerMW(1)
	require.NoError(t, err)
	require.Len(t, out2, 4096)
	out2[0] = 9
	require.Equal(t, byte(9), buf2[0])

	require.NoError(t, b.MWClearTrans(1))
	_, err = a.PeerMW(1)
	require.ErrorIs(t, err, ntb.ErrRange)

	for _, size := range []int64{0, 100, 32 << 20} {
		_, err = b.MWSetTrans(0, size)
		require.ErrorIs(t, err, ntb.ErrRange, "size %d", size)
	}
	_, err = b.MWSetTrans(2, 4096)
	require.ErrorIs(t, err, ntb.ErrRange)
	_, err = a.PeerMW(-1)
	require.ErrorIs(t, err, ntb.ErrRange)
}

// TestDoorbellStorm: both sides ring every bit from several goroutines;
// the receiver, clearing what it is told, sees every bit, and the event
// count never exceeds the sets (bits merge, events are never invented).
func TestDoorbellStorm(t *testing.T) {
	a, b := pair(newRing(t, 2, fastOptions()))
	const rounds = 200
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range rounds {
				if err := a.PeerDBSet(1 << ((g*rounds + i) % 16)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	var seen uint64
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	events := 0
	for seen != 0xffff {
		select {
		case e := <-b.Events():
			if e.Kind == ntb.DoorbellEvent {
				events++
				seen |= e.DB
				require.NoError(t, b.DBClear(e.DB))
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("bits seen %#x", seen)
		}
	}
	<-done
	require.LessOrEqual(t, events, 4*rounds)
	require.Equal(t, uint64(4*rounds), a.Stats().DoorbellsSent)
}

// A port kicked lately looks at its interrupt word in short steps, not
// only when the FIFO wakes it: a process whose processors polling
// goroutines keep busy serves its network poller, and so the FIFO, only
// every 10 ms. Here the second doorbell is raised without its FIFO byte,
// as if the poller never came round, and Poll is a minute: only a step
// can find it.
func TestDoorbellSeenWithoutFIFO(t *testing.T) {
	o := fastOptions()
	o.Poll = time.Minute
	o.DeadAfter = 2 * time.Minute
	a, b := pair(newRing(t, 2, o))
	require.NoError(t, a.PeerDBSet(1<<1))
	nextEvent(t, b, ntb.DoorbellEvent)
	require.NoError(t, b.DBClear(1<<1))
	require.Eventually(t, func() bool { return atomic.LoadUint32(b.own.sleeping()) != 0 }, 10*time.Second, 10*time.Microsecond)

	atomic.OrUint32(b.own.pending(), 1<<2)
	atomic.AddUint32(b.own.irq(), 1) // the kick, less its FIFO byte
	select {
	case e := <-b.Events():
		require.Equal(t, ntb.DoorbellEvent, e.Kind)
		require.Equal(t, uint64(1<<2), e.DB)
	case <-time.After(10 * time.Second):
		t.Fatal("a kick without its FIFO byte was not seen within 10s")
	}
}

// The contract a doorbell protocol builds on: a receiver that clears the
// bits of an event before it looks at the work they announce misses no
// work, however the rings of a bit merge with those before the clear.
// Here, as in the seed protocol, eight senders share four mailboxes (a
// scratchpad group each): a sender waits for its mailbox to be empty,
// fills it and rings its own bit; the receiver's dispatcher clears each
// event's bits and then kicks the workers of those bits, which empty the
// bit's mailbox, whatever sender filled it. Every message arrives, and
// no sender waits long for its mailbox.
func TestDoorbellClearThenLookLosesNothing(t *testing.T) {
	a, b := pair(newRing(t, 2, fastOptions()))
	const (
		senders = 8
		boxes   = 4
		rounds  = 2000
		bound   = 10 * time.Second
	)
	var (
		box      [boxes]atomic.Uint32
		boxMu    [boxes]sync.Mutex // senders sharing a mailbox take turns
		received [senders]atomic.Uint32
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	kicks := make([]chan struct{}, senders)
	for n := range senders {
		kicks[n] = make(chan struct{}, 1)
		wg.Go(func() { // worker n
			for {
				select {
				case <-stop:
					return
				case <-kicks[n]:
				}
				if v := box[n%boxes].Swap(0); v != 0 {
					received[v>>16-1].Add(1)
				}
			}
		})
	}
	wg.Go(func() { // dispatcher
		for {
			select {
			case <-stop:
				return
			case e := <-b.Events():
				if e.Kind != ntb.DoorbellEvent {
					continue
				}
				if err := b.DBClear(e.DB); err != nil {
					t.Error(err)
					return
				}
				for n := range senders {
					if e.DB&(1<<n) != 0 {
						select {
						case kicks[n] <- struct{}{}:
						default:
						}
					}
				}
			}
		}
	})
	errs := make(chan error, senders)
	for s := range senders {
		go func() {
			g := s % boxes
			for i := range rounds {
				boxMu[g].Lock()
				deadline := time.Now().Add(bound)
				for box[g].Load() != 0 {
					if time.Now().After(deadline) {
						boxMu[g].Unlock()
						errs <- fmt.Errorf("sender %d, message %d: mailbox %d still full after %v: a doorbell was lost", s, i, g, bound)
						return
					}
					runtime.Gosched()
				}
				box[g].Store(uint32(s+1)<<16 | uint32(i))
				err := a.PeerDBSet(1 << s)
				boxMu[g].Unlock()
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range senders {
		require.NoError(t, <-errs)
	}
	require.Eventually(t, func() bool {
		for s := range senders {
			if received[s].Load() != rounds {
				return false
			}
		}
		return true
	}, bound, time.Millisecond)
	close(stop)
	wg.Wait()
}
