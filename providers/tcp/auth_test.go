package tcp

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzDecodeHello feeds arbitrary bytes to the decoder an acceptor runs on
// the first bytes of any connection, before anyone has proved anything: it
// never panics, and what it accepts re-encodes to the same bytes.
func FuzzDecodeHello(f *testing.F) {
	h := hello{size: 4, from: 3, to: 1, domain: 0x1122334455667788}
	for i := range h.nonce {
		h.nonce[i] = byte(i)
	}
	f.Add(h.encode())
	bad := h.encode()
	bad[len(magic)] = 2 // a future version
	f.Add(bad)
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add(bytes.Repeat([]byte{0}, helloLen))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decodeHello(b)
		if err != nil {
			require.ErrorIs(t, err, errHandshake)
			return
		}
		require.Equal(t, b, h.encode())
	})
}
