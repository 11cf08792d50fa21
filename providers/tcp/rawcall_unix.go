//go:build unix && !linux

package tcp

import "syscall"

// The socket's non-blocking calls: here through the syscall package
// (raw_unix.go).

func readNoWait(fd uintptr, p []byte) (int, error)  { return syscall.Read(int(fd), p) }
func writeNoWait(fd uintptr, p []byte) (int, error) { return syscall.Write(int(fd), p) }

func peekNoWait(fd uintptr) error {
	var b [1]byte
	_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return err
}
