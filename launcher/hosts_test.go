package launcher

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

func TestParseHosts(t *testing.T) {
	for in, want := range map[string][]Host{
		"a":                {{"a", 1}},
		"a:2,b:2":          {{"a", 2}, {"b", 2}},
		"a, b:3 ,a:2":      {{"a", 3}, {"b", 3}},
		"10.0.0.1:4":       {{"10.0.0.1", 4}},
		"[fd00::1]:2,node": {{"fd00::1", 2}, {"node", 1}},
		"[fd00::1]":        {{"fd00::1", 1}},
	} {
		got, err := ParseHosts(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "a,,b", "a:0", "a:-1", "a:x", "a:99999999", "-oProxyCommand=x", "a b", "a;rm", "[fd00::1", "[fd00::1]x", "a:", "fd00::1", "[fd00::1]:"} {
		_, err := ParseHosts(in)
		require.ErrorIs(t, err, core.ErrInvalid, "%q", in)
	}
}

func TestReadHostfile(t *testing.T) {
	hosts, err := ReadHostfile(strings.NewReader(`
# the cluster
node1 slots=4   # big one
node2
node3:2 max_slots=8

node1 slots=1
`), "hosts")
	require.NoError(t, err)
	require.Equal(t, []Host{{"node1", 5}, {"node2", 1}, {"node3", 2}}, hosts)

	for _, in := range []string{"", "# nothing\n", "node1 slots=0\n", "node1 cpus=2\n", "node1 slots=x\n", "-x\n"} {
		_, err := ReadHostfile(strings.NewReader(in), "hosts")
		require.ErrorIs(t, err, core.ErrInvalid, "%q", in)
	}
	_, err = ReadHostfile(strings.NewReader("a\nb slots=0\n"), "hosts")
	require.ErrorContains(t, err, "hosts:2:", "the line is named")
}

func TestPlace(t *testing.T) {
	hosts := []Host{{"a", 2}, {"b", 3}}
	got, err := Place(hosts, 0, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "a", "b", "b", "b"}, got, "0 PEs: every slot")
	got, err = Place(hosts, 3, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "a", "b"}, got, "by slot")
	got, err = Place(hosts, 0, 1)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, got, "-N 1")
	_, err = Place(hosts, 6, 0)
	require.ErrorIs(t, err, core.ErrInvalid)
	require.ErrorContains(t, err, "6 PEs asked for, but the hosts have 5 slots (a:2,b:3)")
	_, err = Place(nil, 1, 0)
	require.ErrorIs(t, err, core.ErrInvalid)
}

func TestIsLocal(t *testing.T) {
	h, err := os.Hostname()
	require.NoError(t, err)
	for _, name := range []string{"localhost", "127.0.0.1", "::1", h} {
		require.True(t, isLocal(name), name)
	}
	require.False(t, isLocal("no-such-host.invalid"))
	require.False(t, isLocal("192.0.2.1"), "a documentation address is no interface's")
}
