package core_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// The job directory is the job's to create, the directory above it the
// user's: a GOSHMEM_SHM_DIR that does not exist is refused, not made.
func TestMakeJobDir(t *testing.T) {
	base := t.TempDir()
	missing := filepath.Join(base, "no", "such")
	env := map[string]string{core.EnvShmDir: missing}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	_, err := core.MakeJobDir(lookup, "j1")
	requireEnvError(t, err, core.EnvShmDir, missing, "an existing directory")
	require.NoDirExists(t, filepath.Join(base, "no"))

	file := filepath.Join(base, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	env[core.EnvShmDir] = file
	_, err = core.MakeJobDir(lookup, "j1")
	requireEnvError(t, err, core.EnvShmDir, file, "not a directory")

	env[core.EnvShmDir] = base
	dir, err := core.MakeJobDir(lookup, "j1")
	require.NoError(t, err)
	require.Equal(t, core.JobDir(lookup, "j1"), dir)
	st, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), st.Mode().Perm())
	_, err = core.MakeJobDir(lookup, "j1")
	require.NoError(t, err, "every PE of the job makes it; the second finds it")

	require.NoError(t, os.Symlink(base, core.JobDir(lookup, "j2")))
	_, err = core.MakeJobDir(lookup, "j2")
	require.Error(t, err, "a link where the job directory goes is not the job's")
}
