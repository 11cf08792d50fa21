package loopback

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// A bad GOSHMEM_LOOPBACK_WAKE fails naming what is allowed (PEs that
// disagree: TestOpenFailsOnEveryPE).
func TestWakeParam(t *testing.T) {
	t.Parallel()
	{
		j := newJob(t, 1)
		j.env[paramWake.Env] = "epoll"
		prov, err := core.Lookup(Name)
		require.NoError(t, err)
		_, err = prov.Open(j.cfg(0))
		var envErr *core.EnvError
		require.ErrorAs(t, err, &envErr)
		require.Equal(t, paramWake.Env, envErr.Var)
		require.ErrorContains(t, err, `"futex" or "poller"`)
	}
}

// A domain whose waiters sleep in the poller does not offer its words
// under the protocol's name: a writer of PROTOCOL.md would not poke.
func TestPollerProtocolName(t *testing.T) {
	t.Parallel()
	for _, wake := range []string{WakeFutex, WakePoller} {
		j := newJob(t, 2)
		j.env[paramWake.Env] = wake
		j.run(func(p *peT) {
			name, _ := p.dom.SharedProtocol()
			if wake == WakePoller {
				require.NotEqual(p, ProtocolName, name)
				require.NotNil(p, p.dom.pw)
			} else {
				require.Equal(p, ProtocolName, name)
				require.Nil(p, p.dom.pw)
			}
		})
	}
}
