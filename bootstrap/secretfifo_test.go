//go:build unix

package bootstrap

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// A GOSHMEM_SECRET_FILE naming a FIFO is refused at once: opening one for
// reading would wait for a writer that never comes.
func TestSecretFileFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(path, 0o600))
	done := make(chan error, 1)
	go func() {
		_, _, err := JobFromEnv(envMap(EnvRank, "0", EnvSize, "2", EnvJobID, "j", EnvBootstrap, "h:1", EnvSecretFile, path))
		done <- err
	}()
	select {
	case err := <-done:
		var ee *core.EnvError
		require.ErrorAs(t, err, &ee)
		require.Equal(t, EnvSecretFile, ee.Var)
		require.Equal(t, path, ee.Value)
		require.Contains(t, ee.Allowed, "a regular file")
		require.Contains(t, ee.Allowed, "named pipe")
	case <-time.After(watchdog):
		// Release the reader stuck in open: a writer's open completes it.
		if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		<-done
		t.Fatalf("reading the secret from a FIFO did not return within %v", watchdog)
	}

	t.Run("char device", func(t *testing.T) {
		_, _, err := JobFromEnv(envMap(EnvRank, "0", EnvSize, "2", EnvJobID, "j", EnvBootstrap, "h:1", EnvSecretFile, os.DevNull))
		var ee *core.EnvError
		require.ErrorAs(t, err, &ee)
		require.Contains(t, ee.Allowed, "a character device")
	})
}
