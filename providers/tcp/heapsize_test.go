package tcp_test

import (
	"testing"

	"github.com/goshmem/goshmem/conformance"
)

// tcp's regions hold at most 1 TiB less a byte: a 1T heap is refused
// naming SHMEM_SYMMETRIC_SIZE.
func TestHeapTooLargeNamesSymmetricSize(t *testing.T) {
	conformance.HeapTooLarge(t, "tcp", "1T", map[string]string{"GOSHMEM_TCP_ADDR": "127.0.0.1"})
}
