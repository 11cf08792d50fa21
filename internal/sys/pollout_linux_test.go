//go:build linux

package sys

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// WaitReadable says no after its timeout on an empty socket and yes once
// there is data; WaitWritable says yes on a socket with room.
func TestWaitReadable(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	ok, err := WaitReadable(fds[0], time.Millisecond)
	if err != nil || ok {
		t.Fatalf("empty socket: readable %v, %v; want false, nil", ok, err)
	}
	ok, err = WaitWritable(fds[1], time.Millisecond)
	if err != nil || !ok {
		t.Fatalf("socket with room: writable %v, %v; want true, nil", ok, err)
	}
	if _, err := unix.Write(fds[1], []byte{1}); err != nil {
		t.Fatal(err)
	}
	ok, err = WaitReadable(fds[0], time.Second)
	if err != nil || !ok {
		t.Fatalf("socket with data: readable %v, %v; want true, nil", ok, err)
	}
}
