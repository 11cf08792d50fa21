package shmem

// HeapOffset exposes address translation, so tests can probe the edges of
// the user part of the heap.
func (w *World) HeapOffset(addr uintptr, n int) (int, error) { return w.offset("test", addr, n) }

// HeapBase is the address of the first byte of the user part of the heap.
func (w *World) HeapBase() uintptr { return w.base + internalSize }
