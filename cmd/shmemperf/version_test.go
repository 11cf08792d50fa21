package main

import (
	"bytes"
	"flag"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/version"
)

// --version ends the command, as -h does, without joining a job.
func TestVersion(t *testing.T) {
	for _, spelling := range []string{"-version", "--version"} {
		var out bytes.Buffer
		_, err := parseFlags([]string{spelling}, &out)
		require.ErrorIs(t, err, flag.ErrHelp)
		require.Equal(t, version.Line("shmemperf")+"\n", out.String())
	}
}
