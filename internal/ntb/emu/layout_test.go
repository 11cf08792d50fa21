package emu

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func validHeader() header {
	return header{Version: linkVersion, Link: 2, Hosts: 5, Spads: spadCount, DBBits: dbBits,
		Windows: 2, MWMax: 256 << 20, FileSize: linkFileSize}
}

func TestHeaderRoundTrip(t *testing.T) {
	h := validHeader()
	b := make([]byte, headerSize)
	h.encode(b)
	got, err := decodeHeader(b)
	require.NoError(t, err)
	require.Equal(t, h, got)
}

func TestHeaderRejects(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(h *header, b []byte)
		field string
	}{
		{"magic", func(_ *header, b []byte) { b[0] = 'X' }, "magic"},
		{"version", func(h *header, _ []byte) { h.Version = 2 }, "version"},
		{"one host", func(h *header, _ []byte) { h.Hosts, h.Link = 1, 0 }, "hosts"},
		{"link beyond ring", func(h *header, _ []byte) { h.Link = 5 }, "link"},
		{"spads", func(h *header, _ []byte) { h.Spads = 4 }, "scratchpads"},
		{"doorbells", func(h *header, _ []byte) { h.DBBits = 32 }, "doorbell bits"},
		{"windows", func(h *header, _ []byte) { h.Windows = 9 }, "windows"},
		{"window size", func(h *header, _ []byte) { h.MWMax = 4097 }, "window size"},
		{"file size", func(h *header, _ []byte) { h.FileSize = 8192 }, "file size"},
		{"reserved", func(_ *header, b []byte) { b[headerSize-1] = 1 }, "reserved byte 63"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := validHeader()
			b := make([]byte, headerSize)
			tt.edit(&h, b) // header edits first, byte edits after encoding
			h.encode(b)
			tt.edit(&h, b)
			_, err := decodeHeader(b)
			var he *HeaderError
			require.ErrorAs(t, err, &he)
			require.Equal(t, tt.field, he.Field)
		})
	}
	_, err := decodeHeader(make([]byte, 10))
	require.ErrorContains(t, err, "length")
}

// FuzzDecodeHeader: the header of a link file comes from another process.
// Whatever the bytes, decoding never panics, and what it accepts encodes
// back to the very same bytes.
func FuzzDecodeHeader(f *testing.F) {
	for _, h := range []header{validHeader(), {Version: linkVersion, Link: 0, Hosts: 2, Spads: spadCount,
		DBBits: dbBits, Windows: maxWindows, MWMax: mwAlign, FileSize: linkFileSize}} {
		b := make([]byte, headerSize)
		h.encode(b)
		f.Add(b)
	}
	f.Add([]byte("GSHMNTB\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decodeHeader(b)
		if err != nil {
			return
		}
		out := make([]byte, headerSize)
		h.encode(out)
		if !bytes.Equal(out, b[:headerSize]) {
			t.Fatalf("decoded %+v re-encodes to %x, not %x", h, out, b[:headerSize])
		}
	})
}

// FuzzWindowRegister: the window register is written by the peer; a
// translation it accepts is one MWSetTrans could have made.
func FuzzWindowRegister(f *testing.F) {
	f.Add(uint32(0), uint64(0))
	f.Add(uint32(1), uint64(4096))
	f.Add(uint32(7), uint64(16<<20))
	f.Fuzz(func(t *testing.T, gen uint32, size uint64) {
		const mwMax = 16 << 20
		b := make([]byte, sideSize)
		r := regs{b}
		r.setWindow(1, window{Gen: gen, Size: size})
		w := r.window(1)
		if validWindow(w, mwMax) != nil {
			return
		}
		if w.Gen != 0 && (w.Size == 0 || w.Size > mwMax || w.Size%mwAlign != 0) {
			t.Fatalf("accepted %+v", w)
		}
		if w.Gen == 0 && w.Size != 0 {
			t.Fatalf("accepted a size without a translation: %+v", w)
		}
	})
}
