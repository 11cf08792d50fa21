package sys

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// MakeFIFO creates a named pipe at path, 0600, replacing a stale one.
func MakeFIFO(path string) error {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return unix.Mkfifo(path, 0o600)
}

// OpenFIFOReader opens the named pipe at path for its owner: read and
// write (so the open does not wait for a writer, and reads never see end
// of file), non-blocking, as an *os.File the runtime's network poller
// waits on, so a Read with a deadline parks the goroutine in the poller
// rather than a thread in the kernel.
func OpenFIFOReader(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|syscall.O_NONBLOCK, 0)
}

// OpenFIFOWriter opens the named pipe at path non-blocking, for Poke.
// It opens it for reading too, though it never reads: the pipe then
// always has a reader, so a write never fails with EPIPE nor raises
// SIGPIPE (fatal in a C program that has not ignored it) once the owner
// is gone; its pipe fills, and further pokes are no-ops.
func OpenFIFOWriter(path string) (int, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return fd, nil
}

var pokeByte = [1]byte{1}

// Poke writes one byte to a pipe opened by OpenFIFOWriter. A full pipe
// (EAGAIN) is success: its reader has a byte to wake on already, or has
// gone.
func Poke(fd int) error {
	for {
		// Raw (WriteNoWait): the descriptor never blocks, and a write
		// that entered the runtime's system-call state could lose the
		// caller's runtime processor to the runtime's monitor when the
		// CPU is taken from it meanwhile, a hand-off of the processor
		// to another thread and back.
		_, err := WriteNoWait(uintptr(fd), pokeByte[:])
		switch {
		case err == nil, errors.Is(err, unix.EAGAIN):
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		}
		return os.NewSyscallError("write", err)
	}
}

// CloseFD closes a descriptor from OpenFIFOWriter.
func CloseFD(fd int) error { return unix.Close(fd) }
