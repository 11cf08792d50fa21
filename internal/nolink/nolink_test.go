package nolink

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/shmem"
)

// A program without a provider is told to link one, whatever
// GOSHMEM_PROVIDER says: no value of it can help.
func TestInitWithoutAProviderSaysHowToLinkOne(t *testing.T) {
	require.Empty(t, core.Names(), "this test binary must link no provider")
	for _, spec := range []string{"", "loopback", "^tcp"} {
		t.Run("GOSHMEM_PROVIDER="+spec, func(t *testing.T) {
			env := map[string]string{}
			if spec != "" {
				env[core.EnvProvider] = spec
			}
			w, err := shmem.Init(
				shmem.WithBootstrap(bootstrap.NewLocal(1)[0], "nolink"),
				shmem.WithHeapSize(1<<20),
				shmem.WithEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }),
			)
			require.Nil(t, w)
			require.ErrorIs(t, err, core.ErrNoProviderLinked)
			require.ErrorIs(t, err, core.ErrNotSupported)
			require.Contains(t, err.Error(), "no provider is linked into this program")
			require.Contains(t, err.Error(), `import _ "github.com/goshmem/goshmem/providers/all"`)
			require.NotContains(t, err.Error(), "unknown provider")
		})
	}
}
