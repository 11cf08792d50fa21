package tcp

import "github.com/goshmem/goshmem/internal/mem"

// Where a large put's source lies against the kernel's copy of it.
//
// The kernel copies a written payload into pages of its own, appending to
// the page it last filled or, once that page's earlier data has been
// read, to a page from its start: after a quiet the frame's header lands
// at the start of a page and the payload right after it, hdrLen bytes in.
// How fast that copy runs depends on where source and destination lie in
// their pages: with the destination a few bytes ahead of the source (the
// distance under a cache line), each load waits on the store before it,
// whose address matches in its last twelve bits (4K aliasing). A C
// program's malloc returns large blocks 16 bytes into a page: its payload
// lands 8 bytes ahead of where it is read, and the kernel's copy of a
// 4 MiB put from it took about four times as long as from a source
// placed to match, and over twice as long as from a Go heap slice, which
// starts a page (perf's samples in _copy_from_iter, put and quiet in a
// loop).
//
// So a locked caller's large put (a C program's) goes as two frames, the
// bulk first and the first few bytes after: the bulk's source then starts
// where its copy lands in the page, whatever the buffer's place. A put's
// bytes have no order among themselves until a quiet, and both frames
// are written before the put returns. Go programs' puts are unchanged.

// largePut is the smallest of a locked caller's puts that headFirst
// places, and after which its quiet waits for the acknowledgement in
// poll(2) (ackwait.go).
const largePut = 256 << 10

// headFirst returns how many leading bytes of src to send after the rest
// so that the rest's source lies in its page where the kernel's copy of
// it lands after a frame header at the start of a page; 0 for a put sent
// as it is (small, not a locked caller's, or already so placed).
func (d *domain) headFirst(src []byte) int {
	if !d.lockedCallers || len(src) < largePut {
		return 0
	}
	const page = 4096
	return int((hdrLen - mem.Addr(src)) & (page - 1))
}
