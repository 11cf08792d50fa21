package netif

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoopbackAddr(t *testing.T) {
	ip, err := Addr("lo")
	if err != nil {
		t.Skipf("no usable loopback interface here: %v", err)
	}
	require.True(t, ip.IsLoopback(), "%v", ip)
	require.Contains(t, Names(), "lo")
}

func TestUnknownInterface(t *testing.T) {
	_, err := Addr("no-such-interface0")
	require.Error(t, err)
}
