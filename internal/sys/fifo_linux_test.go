package sys

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A poked FIFO wakes its reader in the poller; a full one still pokes
// without error; an empty one times out at the reader's deadline; one whose
// owner is gone takes pokes without error.
func TestFIFOPoke(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wake")
	if err := MakeFIFO(path); err != nil {
		t.Fatal(err)
	}
	r, err := OpenFIFOReader(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := OpenFIFOWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	defer CloseFD(w)

	buf := make([]byte, 64)
	if err := r.SetReadDeadline(time.Now().Add(time.Millisecond)); err != nil {
		t.Fatalf("deadline on a FIFO: %v (not in the poller?)", err)
	}
	if n, err := r.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read of an empty FIFO: %d, %v; want the deadline", n, err)
	}

	got := make(chan int, 1)
	go func() {
		_ = r.SetReadDeadline(time.Now().Add(time.Minute))
		n, _ := r.Read(buf)
		got <- n
	}()
	if err := Poke(w); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-got:
		if n != 1 {
			t.Fatalf("read %d bytes, want 1", n)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("reader not woken by a poke")
	}

	// Fill the pipe: pokes past its capacity are not errors.
	for range 1 << 17 {
		if err := Poke(w); err != nil {
			t.Fatalf("poke of a full FIFO: %v", err)
		}
	}
	// The owner gone, a poke is still no error (and no SIGPIPE).
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := Poke(w); err != nil {
		t.Fatalf("poke with the owner gone: %v", err)
	}
}
