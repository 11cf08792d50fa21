package tcp

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/internal/sys"
)

// roomEvery is how often the host's CPU pressure is sampled; the first
// sample comes roomFirst after the first look. Until then the CPUs count
// as having room: a job's first operations are served as its later ones
// are where the host is quiet, and a busy host closes the gate within
// roomFirst, a hundred round trips or so.
const (
	roomEvery = int64(10 * time.Millisecond)
	roomFirst = int64(time.Millisecond)
)

// roomStall is the share of time, in percent, in which some thread waited
// for a CPU from which the host's CPUs have no room for polling
// (GOSHMEM_TCP_POLL_STALL; the last domain opened in a process sets it
// for all). Polling with two runtime processors per PE gained nothing
// where threads waited 80-95% of the time and nearly halved latency near
// idle; 25% leaves room for the pollers' own competition with the
// runtime's threads. 100 holds the gate open and 0 closed, whatever the
// kernel reports.
var roomStall atomic.Int32

func init() { roomStall.Store(25) }

// hostCPU samples this host's CPU pressure for cpuRoom, for every domain
// of the process. stall stays nil where the kernel keeps no pressure
// information: there nobody polls.
var hostCPU struct {
	once  sync.Once
	stall *sys.CPUStall
	mu    sync.Mutex // held by the goroutine sampling
	total time.Duration
	at    atomic.Int64
	room  atomic.Bool
	// sampled says that a sample has set room, so that the next is due
	// roomEvery after it, not roomFirst.
	sampled atomic.Bool
}

// cpuRoom says whether this host's CPUs had room for polling when last
// sampled, at most about roomEvery before now: whether some thread waited
// for a CPU less than roomStall of the time since the sample before.
func cpuRoom(now int64) bool {
	h := &hostCPU
	h.once.Do(func() {
		s, err := sys.OpenCPUStall()
		if err != nil {
			return
		}
		if h.total, err = s.Total(); err != nil {
			_ = s.Close()
			return
		}
		h.stall = s
		h.at.Store(nanotime())
		h.room.Store(true)
	})
	switch roomStall.Load() {
	case 0:
		return false
	case 100:
		return true
	}
	every := roomEvery
	if !h.sampled.Load() {
		every = roomFirst
	}
	if h.stall != nil && now-h.at.Load() >= every && h.mu.TryLock() {
		if total, err := h.stall.Total(); err == nil {
			at := nanotime()
			frac := float64(total-h.total) / float64(at-h.at.Load())
			h.room.Store(100*frac < float64(roomStall.Load()))
			h.total = total
			h.at.Store(at)
		} else {
			h.room.Store(false)
		}
		h.sampled.Store(true)
		h.mu.Unlock()
	}
	return h.room.Load()
}
