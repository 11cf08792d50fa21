package plugin_test

import (
	"testing"
	"time"

	"github.com/goshmem/goshmem/core"
)

// TestLocalWaiter: a PE waiting in the plugin for a change to its memory
// is woken by a peer's put, not by its wait running out.
func TestLocalWaiter(t *testing.T) {
	p := openPair(t, examplePlugin)
	w, ok := p.doms[1].(core.LocalWaiter)
	if !ok {
		t.Fatalf("%T does not implement core.LocalWaiter, though loopback's domain does", p.doms[1])
	}
	seq, watch := w.WaitArm(p.regs[1], 64, 8)
	defer w.WaitDisarm(watch)
	woke := make(chan uint32)
	go func() { woke <- w.WaitChange(seq, 30*time.Second) }()
	if err := p.ep.PutValue(1, p.reg, 64, 42, 8); err != nil {
		t.Fatal(err)
	}
	if err := p.ep.Quiet(); err != nil {
		t.Fatal(err)
	}
	if got := <-woke; got == seq {
		t.Fatalf("WaitChange returned sequence %d unchanged: the put did not wake it", got)
	}
}
