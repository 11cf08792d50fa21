package mem

import "github.com/goshmem/goshmem/core"

// ScatterBlocks copies local's blocks (b.LocalStride apart) into remote,
// the move's span in the target from its offset (b.RemoteStride apart):
// what a provider that maps the target does for core.BlockMover's
// PutBlocks. A block of one element of up to 8 bytes is written with one
// store (StoreValue), as PutValue writes it. b is valid (Blocks.Check)
// and remote holds b.RemoteSpan() bytes.
func ScatterBlocks(remote, local []byte, b core.Blocks) {
	value := b.Value()
	for i := range b.N {
		l := local[i*b.LocalStride:][:b.Size]
		if value {
			StoreValue(remote, i*b.RemoteStride, LoadValue(l, 0, b.Elem), b.Elem)
		} else {
			copy(remote[i*b.RemoteStride:], l)
		}
	}
}

// GatherBlocks is ScatterBlocks' inverse, for GetBlocks: remote's blocks
// into local's, a block of one element of up to 8 bytes read with one
// load.
func GatherBlocks(local, remote []byte, b core.Blocks) {
	value := b.Value()
	for i := range b.N {
		l := local[i*b.LocalStride:][:b.Size]
		if value {
			StoreValue(l, 0, LoadValue(remote, i*b.RemoteStride, b.Elem), b.Elem)
		} else {
			copy(l, remote[i*b.RemoteStride:])
		}
	}
}
