//go:build linux

package sys

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseStall(t *testing.T) {
	d, err := parseStall([]byte("some avg10=1.50 avg60=0.00 avg300=0.00 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"))
	require.NoError(t, err)
	require.Equal(t, 123456*time.Microsecond, d)
	for _, bad := range []string{"", "full avg10=0 total=1\n", "some avg10=0\n", "some total=\n", "some total=12x\n", "some total=99999999999999999999\n"} {
		_, err := parseStall([]byte(bad))
		require.Error(t, err, "%q", bad)
	}
}

func TestCPUStallGrowsOrIsMissing(t *testing.T) {
	s, err := OpenCPUStall()
	if err != nil {
		t.Skipf("no CPU pressure information on this kernel: %v", err)
	}
	defer s.Close()
	a, err := s.Total()
	require.NoError(t, err)
	b, err := s.Total()
	require.NoError(t, err)
	require.GreaterOrEqual(t, b, a)
}

func BenchmarkCPUStall(b *testing.B) {
	s, err := OpenCPUStall()
	if err != nil {
		b.Skip(err)
	}
	defer s.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Total(); err != nil {
			b.Fatal(err)
		}
	}
}
