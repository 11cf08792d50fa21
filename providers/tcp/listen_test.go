package tcp

import (
	"fmt"
	"log/slog"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
)

// openHosts opens a job of n PEs posing on the hosts named, with the
// listening address left to the provider.
func openHosts(t *testing.T, hosts []string) []*domain {
	t.Helper()
	boots := bootstrap.NewLocal(len(hosts))
	doms := make([]*domain, len(hosts))
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	for rank := range hosts {
		wg.Go(func() {
			cfg := &core.Config{Bootstrap: boots[rank], JobID: "tcp-hosts", Secret: testSecret,
				Log: slog.New(slog.DiscardHandler), HostID: hosts[rank],
				Env: func(string) (string, bool) { return "", false }}
			d, err := provider{}.Open(cfg)
			errs[rank] = err
			if err == nil {
				doms[rank] = d.(*domain)
			}
		})
	}
	wg.Wait()
	for rank, err := range errs {
		require.NoError(t, err, "open PE %d", rank)
	}
	t.Cleanup(func() { closeAll(t, doms) })
	return doms
}

// A job whose PEs all run on one host listens on, and dials, the
// loopback address: nothing of it is reachable from other hosts. A job
// across hosts listens on every interface, as before.
func TestOneHostListensOnLoopback(t *testing.T) {
	doms := openHosts(t, []string{"h", "h", "h"})
	for _, d := range doms {
		ta := d.ln.Addr().(*net.TCPAddr)
		require.Equal(t, "127.0.0.1", ta.IP.String(), "PE %d listens on %v", d.rank, ta)
		require.Equal(t, []string{net.JoinHostPort("127.0.0.1", fmt.Sprint(ta.Port))}, advertised(d.ln.Addr()))
		for pe, c := range d.conns {
			if c != nil {
				require.Equal(t, "127.0.0.1", c.nc.RemoteAddr().(*net.TCPAddr).IP.String(), "PE %d to %d", d.rank, pe)
			}
		}
	}

	doms = openHosts(t, []string{"h0", "h1"})
	for _, d := range doms {
		require.True(t, d.ln.Addr().(*net.TCPAddr).IP.IsUnspecified(), "PE %d of a job on two hosts listens on %v", d.rank, d.ln.Addr())
	}
}
