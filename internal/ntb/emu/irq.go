package emu

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/goshmem/goshmem/internal/sys"
)

// An irqLine is the kernel half of one side's interrupt: a FIFO next to
// the link file, which both hosts of the link open. The side's event
// goroutine, when it found nothing to do, sleeps reading it, and whoever
// kicks the side while it sleeps writes a byte into it. A read of a FIFO
// waits in Go's network poller, so the sleeper holds none of the
// runtime's processors. A futex wait, which it replaces, is a system call
// that keeps its processor until the runtime's monitor takes it back:
// with GOMAXPROCS=1 (what oshrun gives 2 PEs on 2 CPUs) that held up the
// host's DMA engines and receivers for up to milliseconds at a time, and
// put bandwidth between two processes swung from 6.5 GB/s to 0.15.
type irqLine struct {
	f   *os.File
	raw syscall.RawConn
	buf [64]byte // the sleeper drains up to this many wake-ups at once
}

// wakeByte is what a kick writes.
var wakeByte = []byte{1}

// irqPath is the FIFO of side (0: the link's host k, its Right port; 1:
// host k+1, its Left port) of the link whose file is link.
func irqPath(link string, side int) string { return fmt.Sprintf("%s.irq%d", link, side) }

// makeIRQs creates both FIFOs of the link whose file is link.
func makeIRQs(link string) error {
	for side := range 2 {
		if err := sys.MakeFIFO(irqPath(link, side)); err != nil {
			return fmt.Errorf("ntb emu: interrupt line %s: %w", irqPath(link, side), err)
		}
	}
	return nil
}

// removeIRQs removes both FIFOs of a link; open ones stay usable.
func removeIRQs(link string) {
	for side := range 2 {
		_ = os.Remove(irqPath(link, side))
	}
}

// openIRQ opens a FIFO for reading and writing: opening never waits for
// the other end, and a write never fails for want of a reader.
func openIRQ(path string) (*irqLine, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("ntb emu: interrupt line: %w", err)
	}
	raw, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("ntb emu: interrupt line %s: %w", path, err)
	}
	return &irqLine{f: f, raw: raw}, nil
}

// raise writes a wake-up without waiting: a FIFO too full to take it
// holds wake-ups already.
func (l *irqLine) raise() {
	_ = l.raw.Write(func(fd uintptr) bool {
		_, _ = syscall.Write(int(fd), wakeByte)
		return true
	})
}

// wait returns once a wake-up is in the FIFO, draining it, or after d.
func (l *irqLine) wait(d time.Duration) {
	if l.f.SetReadDeadline(time.Now().Add(d)) == nil {
		_, _ = l.f.Read(l.buf[:])
	}
}

func (l *irqLine) close() error { return l.f.Close() }

// kick tells the holder of r's side, whose line is l, that something
// changed: it bumps irq and, if the side's event goroutine sleeps, wakes
// it. The bump and the load of sleeping are sequentially consistent, as
// are the goroutine's store of sleeping and load of irq, so one of the
// two sees the other and no wake-up is lost.
func kick(r regs, l *irqLine) {
	atomic.AddUint32(r.irq(), 1)
	if atomic.LoadUint32(r.sleeping()) != 0 {
		l.raise()
	}
}
