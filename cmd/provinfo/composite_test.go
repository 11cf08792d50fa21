package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The composite a job spanning hosts gets is listed, and shown by name.
func TestListsComposite(t *testing.T) {
	code, out, _ := runArgs()
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^tcp\+loopback\s+any-host\s+.*direct-access`, out)

	code, out, _ = runArgs("-p", "tcp+loopback", "-v")
	require.Equal(t, 0, code)
	require.Contains(t, out, "provider: tcp+loopback")
	require.Contains(t, out, "GOSHMEM_HYBRID")

	code, out, _ = runArgs("-e")
	require.Equal(t, 0, code)
	require.Contains(t, out, "GOSHMEM_HYBRID")

	code, _, _ = runArgs("-p", "nosuch+loopback")
	require.Equal(t, 1, code)
}
