package loopback

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func validHeader() ctlHeader {
	return ctlHeader{Version: ctlVersion, Rank: 3, NPEs: 4, CtlSize: ctlSize, JobHash: jobHash("job"), Domain: 0x1234_5678_9abc_def0}
}

func encoded(h ctlHeader) []byte {
	b := make([]byte, hdrSize)
	h.encode(b)
	return b
}

func TestHeaderRoundTrip(t *testing.T) {
	h := validHeader()
	got, err := decodeHeader(encoded(h))
	require.NoError(t, err)
	require.Equal(t, h, got)
	require.NoError(t, got.check(h))
}

func TestHeaderDecodeErrors(t *testing.T) {
	mutate := func(f func(b []byte)) []byte {
		b := encoded(validHeader())
		f(b)
		return b
	}
	other := validHeader()
	other.Version = ctlVersion + 1
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "0 bytes"},
		{"short", encoded(validHeader())[:hdrSize-1], "63 bytes"},
		{"zeros", make([]byte, hdrSize), "not a loopback control file"},
		{"bad magic", mutate(func(b []byte) { b[0] ^= 1 }), "not a loopback control file"},
		{"other version", encoded(other), "layout version"},
		{"reserved byte", mutate(func(b []byte) { b[hdrSize-1] = 1 }), "reserved byte at offset 63"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeHeader(tt.in)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestHeaderCheck(t *testing.T) {
	tests := []struct {
		name   string
		change func(h *ctlHeader)
		want   string
	}{
		{"rank", func(h *ctlHeader) { h.Rank = 2 }, "claims rank 2, want 3"},
		{"npes", func(h *ctlHeader) { h.NPEs = 5 }, "job of 5 PEs, this job has 4"},
		{"job", func(h *ctlHeader) { h.JobHash = jobHash("other") }, "another job"},
		{"domain", func(h *ctlHeader) { h.Domain++ }, "another domain"},
		{"size", func(h *ctlHeader) { h.CtlSize = 1 }, "control file size 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := validHeader()
			tt.change(&h)
			require.ErrorContains(t, h.check(validHeader()), tt.want)
		})
	}
}

// FuzzDecodeHeader feeds the decoder what another process might have left
// in a control file. It must never panic, and whatever it accepts must be
// exactly what encode writes, so no byte of an accepted header goes
// unchecked.
func FuzzDecodeHeader(f *testing.F) {
	f.Add(encoded(validHeader()))
	f.Add(encoded(ctlHeader{Version: ctlVersion}))
	f.Add(encoded(ctlHeader{Version: ctlVersion, Rank: 1<<32 - 1, NPEs: 1<<32 - 1, CtlSize: 1<<32 - 1,
		JobHash: 1<<64 - 1, Domain: 1<<64 - 1}))
	f.Add(append(encoded(validHeader()), make([]byte, ctlSize-hdrSize)...))
	f.Add([]byte(ctlMagic))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decodeHeader(b)
		if err != nil {
			require.NotEmpty(t, err.Error())
			return
		}
		require.True(t, bytes.Equal(b[:hdrSize], encoded(h)), "accepted header does not re-encode to its bytes")
		_ = h.check(validHeader())
	})
}

// TestPageBits checks the watch summary's promise: ranges that share a
// byte share a bit. Ranges far apart must not, or the summary saves nothing.
func TestPageBits(t *testing.T) {
	for _, r := range [][4]uint64{
		{0, 8, 7, 8}, {0, 8, 0, 1}, {4095, 4096, 4095, 4097}, {0, 64 << 12, 100 << 12, 100<<12 + 1},
		{watchKey(1, 0), watchKey(1, 8), watchKey(1, 4), watchKey(1, 5)}, {5 << 12, 9 << 12, 8<<12 + 5, 8<<12 + 6},
	} {
		if pageBits(r[0], r[1])&pageBits(r[2], r[3]) == 0 {
			t.Errorf("overlapping [%#x, %#x) and [%#x, %#x) share no bit", r[0], r[1], r[2], r[3])
		}
	}
	// A team's barrier words and the start of the user heap, 2 MiB on.
	require.Zero(t, pageBits(4096, 4096+256)&pageBits(2<<20+4096, 2<<20+4096+8))
	require.Equal(t, ^uint64(0), pageBits(0, (summaryPages+1)<<pageShift))
	require.NotEqual(t, ^uint64(0), pageBits(0, summaryPages<<pageShift))
}

func FuzzPageBits(f *testing.F) {
	f.Add(uint64(0), uint64(8), uint64(4), uint64(4))
	f.Add(uint64(4095), uint64(2), uint64(4096), uint64(1))
	f.Fuzz(func(t *testing.T, lo, n, at, m uint64) {
		n, m = n%(1<<20)+1, m%(1<<20)+1
		lo, at = lo%(1<<50), at%(1<<50)
		if at < lo+n && lo < at+m && pageBits(lo, lo+n)&pageBits(at, at+m) == 0 {
			t.Fatalf("[%d,+%d) and [%d,+%d) overlap but share no bit", lo, n, at, m)
		}
	})
}
