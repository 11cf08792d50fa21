package tcp

import "github.com/goshmem/goshmem/internal/sys"

// The socket's non-blocking calls, raw where the system allows
// (raw_unix.go).

func readNoWait(fd uintptr, p []byte) (int, error)  { return sys.ReadNoWait(fd, p) }
func writeNoWait(fd uintptr, p []byte) (int, error) { return sys.WriteNoWait(fd, p) }
func peekNoWait(fd uintptr) error                   { return sys.PeekNoWait(fd) }
