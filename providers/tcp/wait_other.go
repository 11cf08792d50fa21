//go:build !linux

package tcp

// waitRaw is waitRaw of wait_linux.go where there is none: it says it
// cannot wait.
func (s *sockReader) waitRaw(fd uintptr) {}

// canWait says whether waitRaw can wait on this system.
const canWait = false
