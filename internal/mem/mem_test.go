package mem

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

func TestAtomicEveryOp(t *testing.T) {
	for _, typ := range []core.AtomicType{core.Int32, core.Uint32, core.Int64, core.Uint64} {
		mask := uint64(math.MaxUint64)
		if typ.Size() == 4 {
			mask = math.MaxUint32
		}
		b := make([]byte, 16)
		off := 8
		set := func(v uint64) { Atomic(b, off, core.AtomicWrite, typ, v, 0) }
		get := func() uint64 { return Atomic(b, off, core.AtomicRead, typ, 0, 0) }
		for _, tc := range []struct {
			op            core.AtomicOp
			start, v, cmp uint64
			old, after    uint64
		}{
			{core.AtomicAdd, 5, 3, 0, 5, 8},
			{core.AtomicAdd, mask, 2, 0, mask, 1},
			{core.AtomicAnd, 0b1100, 0b1010, 0, 0b1100, 0b1000},
			{core.AtomicOr, 0b1100, 0b1010, 0, 0b1100, 0b1110},
			{core.AtomicXor, 0b1100, 0b1010, 0, 0b1100, 0b0110},
			{core.AtomicSwap, 7, 9, 0, 7, 9},
			{core.AtomicCSwap, 7, 9, 7, 7, 9},
			{core.AtomicCSwap, 7, 9, 8, 7, 7},
			{core.AtomicWrite, 7, 9, 0, 7, 9},
		} {
			set(tc.start)
			old := Atomic(b, off, tc.op, typ, tc.v, tc.cmp)
			require.Equal(t, tc.old, old, "%v %v old", typ, tc.op)
			require.Equal(t, tc.after, get(), "%v %v after", typ, tc.op)
		}
		require.Equal(t, make([]byte, 8), b[:8], "%v touched the neighbouring bytes", typ)
	}
}

func TestBitsRoundTrip(t *testing.T) {
	require.Equal(t, float32(-2.5), FromBits[float32](ToBits(float32(-2.5))))
	require.Equal(t, math.Pi, FromBits[float64](ToBits(math.Pi)))
	require.Equal(t, int8(-3), FromBits[int8](ToBits(int8(-3))))
	require.Equal(t, uint64(0xfd), ToBits(int8(-3)), "zero-extended, not sign-extended")
	require.Equal(t, int16(-300), FromBits[int16](ToBits(int16(-300))))
	require.Equal(t, complex64(1-2i), FromBits[complex64](ToBits(complex64(1-2i))))
}

func TestValueAndLoad(t *testing.T) {
	b := make([]byte, 16)
	for size, want := range map[int]uint64{1: 0x88, 2: 0x7788, 4: 0x55667788, 8: 0x1122334455667788} {
		clear(b)
		StoreValue(b, 8, 0x1122334455667788, size)
		require.Equal(t, want, LoadValue(b, 8, size))
		require.Equal(t, make([]byte, 8-size), b[8+size:], "size %d wrote past its end", size)
	}
	s := Slice[int16](make([]byte, 8))
	s[1], s[2] = -7, 300
	require.Equal(t, int16(-7), Load(&s[1]))
	require.Equal(t, int16(300), Load(&s[2]))
	u := Slice[uint64](make([]byte, 16))
	u[1] = 42
	require.Equal(t, uint64(42), Load(&u[1]))
}

func TestSliceViews(t *testing.T) {
	b := make([]byte, 24)
	s := Slice[int64](b)
	require.Len(t, s, 3)
	s[2] = -1
	require.Equal(t, byte(0xff), b[23])
	require.Len(t, Bytes(s), 24)
	require.Nil(t, Slice[int64](b[:7]))
	require.Nil(t, Bytes[int64](nil))
	require.Equal(t, 8, SizeOf[complex64]())
	require.Equal(t, Addr(b)+16, PtrAddr(&s[2]))
}
