package plugin

import (
	"reflect"
	"testing"
)

func TestManifestRoundTrip(t *testing.T) {
	in := sampleInfo()
	got, err := decodeManifest(encodeManifest(in))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := decodeInfo(encodeInfo(in))
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	for _, bad := range []string{``, `{}`, `{"protocol":1} {}`, `{"protocol":1,"extra":1}`, `[1]`} {
		if _, err := decodeManifest([]byte(bad)); err == nil {
			t.Errorf("manifest %q accepted", bad)
		}
	}
}

// FuzzDecodeManifest feeds the manifest decoder arbitrary files: it must
// refuse or accept without panicking, and what it accepts must survive a
// round trip.
func FuzzDecodeManifest(f *testing.F) {
	f.Add(encodeManifest(sampleInfo()))
	f.Add([]byte(`{"protocol":1,"max_msg_size":1,"locality":1}`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := decodeManifest(b)
		if err != nil {
			return
		}
		again, err := decodeManifest(encodeManifest(in))
		if err != nil || !reflect.DeepEqual(again, in) {
			t.Fatalf("accepted %+v but not its own encoding: %v", in, err)
		}
	})
}
