package loopback

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
)

// testJob is a job whose PEs are goroutines of this test, with its own job
// id and shared-memory directory, so parallel tests never meet.
type testJob struct {
	t      *testing.T
	n      int
	id     string
	shm    string // GOSHMEM_SHM_DIR
	boots  []*bootstrap.Local
	env    map[string]string
	config func(rank int, cfg *core.Config) // per-PE tweaks, may be nil
}

func newJob(t *testing.T, n int) *testJob {
	t.Helper()
	return &testJob{t: t, n: n, id: randomID(), shm: t.TempDir(), boots: bootstrap.NewLocal(n),
		env: map[string]string{}}
}

func randomID() string {
	var b [8]byte
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return hex.EncodeToString(b[:])
}

func (j *testJob) cfg(rank int) *core.Config {
	env := map[string]string{core.EnvShmDir: j.shm}
	for k, v := range j.env {
		env[k] = v
	}
	cfg := &core.Config{
		Bootstrap: j.boots[rank],
		JobID:     j.id,
		Env:       func(k string) (string, bool) { v, ok := env[k]; return v, ok },
	}
	if j.config != nil {
		j.config(rank, cfg)
	}
	return cfg
}

// dir is the job directory the PEs share.
func (j *testJob) dir() string { return core.JobDir(j.cfg(0).Lookup, j.id) }

// peT is one PE's view of the test: require's checks work in its goroutine,
// and a failed check ends only that goroutine (the bootstrap member is
// killed so the other PEs' collectives fail instead of hanging).
type peT struct {
	t    *testing.T
	rank int
	n    int
	job  *testJob
	boot *bootstrap.Local
	dom  *domain // nil in runRaw
}

func (p *peT) Errorf(format string, args ...any) {
	p.t.Helper()
	p.t.Errorf("PE %d: %s", p.rank, fmt.Sprintf(format, args...))
}

func (p *peT) FailNow() { runtime.Goexit() }
func (p *peT) Helper()  { p.t.Helper() }

// barrier is a bootstrap barrier that fails the PE on error.
func (p *peT) barrier() {
	p.Helper()
	require.NoError(p, p.boot.Barrier())
}

// releaseAtEnd closes the domain of a PE the test has killed once the test
// ends, as its process's exit would: a PE that plays dead leaves its domain
// open while the others run, and that domain must not outlive the test,
// where it would count in domainsHere for the tests after it.
func (p *peT) releaseAtEnd(d core.Domain) {
	p.t.Cleanup(func() { _ = d.Close() }) // its barrier fails: the PE is lost
}

// runRaw runs fn on every PE of the job concurrently and waits for all.
func (j *testJob) runRaw(fn func(p *peT)) {
	j.t.Helper()
	var wg sync.WaitGroup
	for rank := range j.n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := &peT{t: j.t, rank: rank, n: j.n, job: j, boot: j.boots[rank]}
			ok := false
			defer func() {
				if !ok {
					j.boots[rank].Kill()
					if p.dom != nil {
						_ = p.dom.Close()
					}
				}
			}()
			fn(p)
			ok = true
		}()
	}
	waitOrDump(j.t, &wg, 2*time.Minute)
}

// run opens the provider on every PE, runs fn and closes the domain.
func (j *testJob) run(fn func(p *peT)) {
	j.t.Helper()
	prov, err := core.Lookup(Name)
	require.NoError(j.t, err)
	j.runRaw(func(p *peT) {
		d, err := prov.Open(j.cfg(p.rank))
		require.NoError(p, err)
		p.dom = d.(*domain)
		fn(p)
		require.NoError(p, p.dom.Close())
	})
}

// waitOrDump waits for wg; a job that hangs fails the test with every
// goroutine's stack rather than running into the binary's timeout.
func waitOrDump(t *testing.T, wg *sync.WaitGroup, limit time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("job did not finish within %v:\n%s", limit, buf)
	}
}

// region creates a region on every PE and an endpoint on this one.
func (p *peT) region(size int, opts core.EndpointOptions) (core.Region, core.Endpoint) {
	p.Helper()
	r, err := p.dom.NewRegion(size)
	require.NoError(p, err)
	ep, err := p.dom.NewEndpoint(opts)
	require.NoError(p, err)
	return r, ep
}

// pattern is n bytes that differ by PE and position, never all zero.
func pattern(pe, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(pe*31 + i*7 + 1)
	}
	return b
}

// dirEntries lists the names in dir.
func dirEntries(t require.TestingT, dir string) []string {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // the last PE out removed it
	}
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		// The records of the processes that use the directory are core's,
		// not the provider's files.
		if !strings.HasPrefix(e.Name(), "owner.") {
			names = append(names, e.Name())
		}
	}
	return names
}
