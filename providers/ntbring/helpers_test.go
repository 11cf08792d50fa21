package ntbring

import (
	"crypto/rand"
	"encoding/hex"
	"maps"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
)

// testEnv is the environment of a test ring: fast timing unless set.
func testEnv(shm string, extra map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		if k == core.EnvShmDir {
			return shm, true
		}
		if v, ok := extra[k]; ok {
			return v, true
		}
		if k == "GOSHMEM_NTB_MODEL" {
			return "off", true
		}
		return "", false
	}
}

func randomID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// openRingErr opens n domains as goroutine hosts, each with env and
// perHost(rank) if set, and returns them or the first error.
func openRingErr(t testing.TB, n int, env map[string]string, perHost ...func(rank int) map[string]string) ([]*domain, error) {
	t.Helper()
	boots := bootstrap.NewLocal(n)
	shm, job := t.TempDir(), randomID()
	doms := make([]*domain, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		e := maps.Clone(env)
		if e == nil {
			e = map[string]string{}
		}
		for _, f := range perHost {
			maps.Copy(e, f(i))
		}
		wg.Go(func() {
			d, err := provider{}.Open(&core.Config{Bootstrap: boots[i], JobID: job, Env: testEnv(shm, e)})
			errs[i] = err
			if err == nil {
				doms[i] = d.(*domain)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return doms, nil
}

// openRingT opens n domains as goroutine hosts and closes them at cleanup.
func openRingT(t testing.TB, n int, env map[string]string) []*domain {
	t.Helper()
	doms, err := openRingErr(t, n, env)
	require.NoError(t, err)
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for i, d := range doms {
			wg.Go(func() {
				if err := d.Close(); err != nil {
					t.Errorf("close host %d: %v", i, err)
				}
			})
		}
		wg.Wait()
	})
	return doms
}

// each runs f on every host at once and waits.
func each(doms []*domain, f func(d *domain)) {
	var wg sync.WaitGroup
	for _, d := range doms {
		wg.Go(func() { f(d) })
	}
	wg.Wait()
}

// regions creates one region of size on every host.
func regions(t testing.TB, doms []*domain, size int) []core.Region {
	rs := make([]core.Region, len(doms))
	each(doms, func(d *domain) {
		r, err := d.NewRegion(size)
		if err != nil {
			t.Error(err)
		}
		rs[d.rank] = r
	})
	require.False(t, t.Failed())
	return rs
}
