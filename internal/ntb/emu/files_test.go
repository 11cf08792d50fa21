package emu

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestFilesPrivateAndRemoved(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	o := fastOptions()
	o.Tag = "t1"
	r, err := NewRing(dir, 3, o)
	require.NoError(t, err)
	require.NoError(t, r.EnableAll(10*time.Second))
	_, err = r.Hosts[1].Left.MWSetTrans(0, 4096)
	require.NoError(t, err)
	_, err = r.Hosts[0].Right.PeerMW(0)
	require.NoError(t, err)
	r.Hosts[2].Kill()

	names, err := filepath.Glob(filepath.Join(dir, "*"))
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"ntb-t1-link0", "ntb-t1-link1", "ntb-t1-link2", "ntb-t1-link0b-mw0-1",
		"ntb-t1-link0.irq0", "ntb-t1-link0.irq1", "ntb-t1-link1.irq0", "ntb-t1-link1.irq1", "ntb-t1-link2.irq0", "ntb-t1-link2.irq1"},
		baseNames(names))
	for _, n := range names {
		st, err := os.Stat(n)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), n)
	}
	require.NoError(t, r.Close())
	names, err = filepath.Glob(filepath.Join(dir, "*"))
	require.NoError(t, err)
	require.Empty(t, names, "Close leaves nothing, killed hosts' files included")
}

func TestOpenedHostRemovesItsFiles(t *testing.T) {
	dir := t.TempDir()
	o := fastOptions()
	hosts := make([]*Host, 2)
	errs := make(chan error, 2)
	for id := range hosts {
		go func() {
			h, err := Open(dir, id, 2, o)
			hosts[id] = h
			errs <- err
		}()
	}
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	for _, h := range hosts {
		require.NoError(t, h.Close())
		require.NoError(t, h.Close(), "twice")
	}
	names, err := filepath.Glob(filepath.Join(dir, "*"))
	require.NoError(t, err)
	require.Empty(t, names)

	// A neighbour that never comes is a bounded wait.
	o.AttachTimeout = 50 * time.Millisecond
	_, err = Open(dir, 0, 3, o)
	require.ErrorContains(t, err, "host 2 did not create")
	names, err = filepath.Glob(filepath.Join(dir, "*"))
	require.NoError(t, err)
	require.Empty(t, names, "a failed Open removes what it created")
}

func baseNames(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}
