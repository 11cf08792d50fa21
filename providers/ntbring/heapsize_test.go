package ntbring_test

import (
	"testing"

	"github.com/goshmem/goshmem/conformance"
)

// The ring's regions hold at most 4 GiB less a byte: a 30G heap is
// refused naming SHMEM_SYMMETRIC_SIZE.
func TestHeapTooLargeNamesSymmetricSize(t *testing.T) {
	conformance.HeapTooLarge(t, "ntbring", "30G", map[string]string{"GOSHMEM_NTB_MODEL": "off"})
}
