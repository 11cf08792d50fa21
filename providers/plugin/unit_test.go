package plugin

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/goshmem/goshmem/core"
	pb "github.com/goshmem/goshmem/providers/plugin/proto"
)

// TestRing checks the staging allocator against a model: random sizes,
// allocated and released in order, never overlap an outstanding extent
// and never leave the area; and an empty ring always has room for size.
func TestRing(t *testing.T) {
	const size = 1000
	r := ring{size: size}
	type ext struct{ start, end int }
	var out []ext
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100000; i++ {
		if len(out) > 0 && rng.IntN(2) == 0 {
			r.release(out[0].end)
			out = out[1:]
			continue
		}
		n := 1 + rng.IntN(size)
		start, ok := r.alloc(n)
		if !ok {
			if len(out) == 0 {
				t.Fatalf("an empty ring refused %d bytes", n)
			}
			continue
		}
		e := ext{start, start + n}
		if e.start < 0 || e.end > size {
			t.Fatalf("extent %v outside [0, %d)", e, size)
		}
		for _, o := range out {
			if e.start < o.end && o.start < e.end {
				t.Fatalf("extent %v overlaps outstanding %v", e, o)
			}
		}
		out = append(out, e)
	}
}

func sampleInfo() core.Info {
	return core.Info{Name: "x", Description: "d", Version: "1", Caps: core.CapRMA | core.CapAtomic,
		Atomics: core.FullAtomics(), Locality: core.OneHost, Progress: core.ProgressAuto,
		Order: core.OrderPutPut, ThreadSafe: true, MaxMsgSize: core.Unbounded, InjectSize: 64,
		Preference: 5, Params: []core.Param{core.NewParam("x", "A", "1", "help")}}
}

func TestInfoRoundTrip(t *testing.T) {
	in := sampleInfo()
	got, err := decodeInfo(encodeInfo(in))
	if err != nil || !reflect.DeepEqual(got, in) {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, in)
	}
	bad := encodeInfo(in)
	bad.Atomics[int(core.Int32)] |= 1 << 15
	if _, err := decodeInfo(bad); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("undefined atomic op accepted: %v", err)
	}
}

// A provider behind a plugin offers only what the plugin protocol
// carries: a quiet of some PEs, batches and blocked moves have no call
// there.
func TestInfoClaimsWhatTheProtocolCarries(t *testing.T) {
	in := sampleInfo()
	in.Caps |= core.CapPEQuiet | core.CapBatch | core.CapPutSignal | core.CapBlocks
	got, err := decodeInfo(encodeInfo(in))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if got.Caps&core.CapBlocks != 0 {
		t.Fatalf("caps %v claim blocked moves", got.Caps.Names())
	}
	if want := in.Caps & allCaps; got.Caps != want {
		t.Fatalf("caps %v, want %v", got.Caps.Names(), want.Names())
	}
}

func TestErrRoundTrip(t *testing.T) {
	for c := uint8(1); c <= core.MaxErrorCode; c++ {
		s, _ := core.ErrorOfCode(c)
		err := &core.OpError{Op: "put", PE: 1, Provider: "x", Err: &core.RemoteError{Msg: "m", Kind: s}}
		got, derr := decodeErr(encodeErr(err))
		if derr != nil || !errors.Is(got, s) || got.Error() != err.Err.Error() {
			t.Fatalf("%v: got %v, %v", err, got, derr)
		}
	}
	for _, kind := range []uint32{uint32(core.MaxErrorCode) + 1, 99, 256 + 1} {
		if _, derr := decodeErr(&pb.Error{Kind: kind, Msg: "m"}); derr == nil {
			t.Fatalf("kind %d accepted", kind)
		}
	}
}

// FuzzDecodeInfo feeds the Info decoder arbitrary replies: it must refuse
// or accept without panicking, and what it accepts must survive a round
// trip.
func FuzzDecodeInfo(f *testing.F) {
	seed, _ := proto.Marshal(encodeInfo(sampleInfo()))
	f.Add(seed)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r pb.InfoReply
		if proto.Unmarshal(b, &r) != nil {
			return
		}
		in, err := decodeInfo(&r)
		if err != nil {
			return
		}
		again, err := decodeInfo(encodeInfo(in))
		if err != nil || !reflect.DeepEqual(again, in) {
			t.Fatalf("accepted %+v but not its own encoding: %v", in, err)
		}
	})
}

// FuzzDecodeErr feeds the error decoder arbitrary errors from the wire.
func FuzzDecodeErr(f *testing.F) {
	for c := uint8(1); c <= core.MaxErrorCode; c++ {
		s, _ := core.ErrorOfCode(c)
		b, _ := proto.Marshal(encodeErr(s))
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var e pb.Error
		if proto.Unmarshal(b, &e) != nil {
			return
		}
		err, derr := decodeErr(&e)
		if derr == nil && err != nil && err.Error() != e.Msg {
			t.Fatalf("decoded %q as %q", e.Msg, err)
		}
	})
}

func TestParseMaps(t *testing.T) {
	data := []byte(`7f0000000000-7f0000001000 rw-s 00000000 00:1a 4242                       /dev/shm/goshmem-j/pe0-1.r0
7f0000002000-7f0000003000 rw-s 00001000 00:1a 77                         /dev/shm/a b (deleted)
garbage
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
`)
	got := parseMaps(data)
	want := []mapping{
		{start: 0x7f0000000000, end: 0x7f0000001000, inode: 4242, path: "/dev/shm/goshmem-j/pe0-1.r0"},
		{start: 0x7f0000002000, end: 0x7f0000003000, offset: 0x1000, inode: 77, path: "/dev/shm/a b", deleted: true},
		{start: 0x7ffd00000000, end: 0x7ffd00021000, path: "[stack]"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

// hostInfo leaves the wrapped provider's Info alone: every PE of a process
// shares it, so appending the plugin's parameters into its spare capacity
// would be a write from each PE at once.
func TestHostInfoLeavesWrappedParams(t *testing.T) {
	params := make([]core.Param, 1, 4)
	params[0] = core.Param{Name: "one", Env: "GOSHMEM_ONE"}
	in := core.Info{Name: "tcp", Params: params}
	out := hostInfo(in, "wrapped", "plugin-path")
	require.Len(t, in.Params, 1)
	require.Equal(t, core.Param{}, params[:2][1], "the wrapped provider's spare capacity was written")
	require.Greater(t, len(out.Params), 1)
	require.Equal(t, params[0], out.Params[0])
}
