//go:build !linux

package sys

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// CreateShared is not implemented on this system.
func CreateShared(path string, size int) ([]byte, error) { return nil, errors.ErrUnsupported }

// OpenShared is not implemented on this system.
func OpenShared(path string, size int) ([]byte, error) { return nil, errors.ErrUnsupported }

// Unmap is not implemented on this system.
func Unmap(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return errors.ErrUnsupported
}

// Retire is not implemented on this system.
func Retire(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return errors.ErrUnsupported
}

// FutexWait is not implemented on this system.
func FutexWait(addr *uint32, val uint32, timeout time.Duration) error { return errors.ErrUnsupported }

// FutexWake is not implemented on this system.
func FutexWake(addr *uint32, n int) (int, error) { return 0, errors.ErrUnsupported }

// Yield does nothing on this system.
func Yield() {}

// CanYield says that Yield and YieldHeld do nothing on this system.
const CanYield = false

// YieldHeld does nothing on this system.
func YieldHeld() {}

// MakeFIFO is not implemented on this system.
func MakeFIFO(path string) error { return errors.ErrUnsupported }

// WaitWritable is not implemented on this system.
func WaitWritable(fd int, timeout time.Duration) (bool, error) { return false, errors.ErrUnsupported }

// WaitReadable is not implemented on this system.
func WaitReadable(fd int, timeout time.Duration) (bool, error) { return false, errors.ErrUnsupported }

// Writev is not implemented on this system.
func Writev(fd int, iov []syscall.Iovec) (int, error) { return 0, errors.ErrUnsupported }

// OpenFIFOReader is not implemented on this system.
func OpenFIFOReader(path string) (*os.File, error) { return nil, errors.ErrUnsupported }

// OpenFIFOWriter is not implemented on this system.
func OpenFIFOWriter(path string) (int, error) { return -1, errors.ErrUnsupported }

// Poke is not implemented on this system.
func Poke(fd int) error { return errors.ErrUnsupported }

// ReadNoWait is not implemented on this system.
func ReadNoWait(fd uintptr, p []byte) (int, error) { return 0, errors.ErrUnsupported }

// CloseFD is not implemented on this system.
func CloseFD(fd int) error { return errors.ErrUnsupported }

// ReserveShared is not implemented on this system.
func ReserveShared(path string, size int) ([]byte, *Backing, error) {
	return nil, nil, errors.ErrUnsupported
}

// Backing is the file under a mapping from ReserveShared.
type Backing struct{}

// Commit is not implemented on this system.
func (b *Backing) Commit(off, n int) error { return errors.ErrUnsupported }

// Allocated is not implemented on this system.
func (b *Backing) Allocated() (int64, error) { return 0, errors.ErrUnsupported }

// Close is not implemented on this system.
func (b *Backing) Close() error { return errors.ErrUnsupported }
