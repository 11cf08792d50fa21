//go:build !linux

package sys

// goshmem runs on Linux only: its shared memory, futexes, CPU binding,
// process watching and the tcp provider's sockets are Linux's, and no
// other system's are built or tested. A build for another system stops
// here, with this sentence in the compiler's error.
var _ int = "goshmem runs on Linux only"
