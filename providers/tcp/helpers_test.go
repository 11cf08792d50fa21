package tcp

import (
	"bytes"
	"log/slog"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
)

// testSecret is the job secret of the tests' jobs.
var testSecret = []byte("0123456789abcdef")

// openJob opens a job of n PEs, goroutines of this test, over real TCP
// connections on 127.0.0.1, and closes it when the test ends.
func openJob(t testing.TB, n int, env map[string]string) ([]*domain, *logBuf) {
	t.Helper()
	return openJobWith(t, n, env, nil)
}

// openJobWith is openJob with each PE's configuration changed by set, if
// not nil.
func openJobWith(t testing.TB, n int, env map[string]string, set func(cfg *core.Config)) ([]*domain, *logBuf) {
	t.Helper()
	boots := bootstrap.NewLocal(n)
	logs := &logBuf{}
	doms := make([]*domain, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for rank := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := &core.Config{Bootstrap: boots[rank], JobID: "tcp-test", Secret: testSecret,
				Log: slog.New(slog.NewTextHandler(logs, nil)),
				Env: func(k string) (string, bool) {
					if k == paramAddr.Env {
						if v, ok := env[k]; ok {
							return v, true
						}
						return "127.0.0.1", true
					}
					v, ok := env[k]
					return v, ok
				}}
			if set != nil {
				set(cfg)
			}
			d, err := provider{}.Open(cfg)
			errs[rank] = err
			if err == nil {
				doms[rank] = d.(*domain)
			}
		}()
	}
	wg.Wait()
	for rank, err := range errs {
		require.NoError(t, err, "open PE %d", rank)
	}
	t.Cleanup(func() { closeAll(t, doms) })
	return doms, logs
}

// closeAll closes every domain at once, as Close is collective.
func closeAll(t testing.TB, doms []*domain) {
	var wg sync.WaitGroup
	for _, d := range doms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = d.Close()
		}()
	}
	wg.Wait()
}

// each runs f on every PE at once and waits for all.
func each(doms []*domain, f func(d *domain)) {
	var wg sync.WaitGroup
	for _, d := range doms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(d)
		}()
	}
	wg.Wait()
}

// newRegions creates a region of size bytes on every PE.
func newRegions(t testing.TB, doms []*domain, size int) []*region {
	t.Helper()
	regs := make([]*region, len(doms))
	errs := make([]error, len(doms))
	each(doms, func(d *domain) {
		r, err := d.NewRegion(size)
		errs[d.rank] = err
		if err == nil {
			regs[d.rank] = r.(*region)
		}
	})
	for pe, err := range errs {
		require.NoError(t, err, "new region on PE %d", pe)
	}
	return regs
}

func newEndpoint(t testing.TB, d *domain) *endpoint {
	t.Helper()
	ep, err := d.NewEndpoint(core.EndpointOptions{})
	require.NoError(t, err)
	return ep.(*endpoint)
}

// logBuf collects the PEs' log lines.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// tcpPair returns the two ends of a TCP connection over 127.0.0.1.
func tcpPair(t testing.TB) (net.Conn, net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			c = nil
		}
		accepted <- c
	}()
	a, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	b := <-accepted
	require.NotNil(t, b, "accept failed")
	return a, b
}
