package hybrid_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
)

// jobEnv is a job's environment in tests: env, and a shared-memory
// directory of the test's own.
func jobEnv(t *testing.T, env map[string]string) func(string) (string, bool) {
	shm := t.TempDir()
	return func(k string) (string, bool) {
		if k == core.EnvShmDir {
			return shm, true
		}
		v, ok := env[k]
		return v, ok
	}
}

// registered returns the registered providers of the names, in order.
func registered(t *testing.T, names ...string) []core.Provider {
	t.Helper()
	ps := make([]core.Provider, len(names))
	for i, name := range names {
		p, err := core.Lookup(name)
		require.NoError(t, err)
		ps[i] = p
	}
	return ps
}

// openPE opens a PE's domain with p, or where p is nil as core.Open
// composes it over tcp, which must give tcp+loopback.
func openPE(cfg *core.Config, p core.Provider) (core.Domain, error) {
	if p != nil {
		return p.Open(cfg)
	}
	got, d, err := core.Open(cfg, "tcp")
	if err == nil && got.Name() != "tcp+loopback" {
		err = errors.Join(fmt.Errorf("core.Open composed %s, want tcp+loopback", got.Name()), d.Close())
	}
	return d, err
}

// openAll opens a job of len(hosts) PEs in process, PE i posing as
// running on hosts[i], and returns the provider each PE got or its error;
// it closes the domains.
func openAll(t *testing.T, spec string, hosts []string, env map[string]string) ([]string, []error) {
	names, _, errs := openDescribe(t, spec, hosts, env)
	return names, errs
}

// openDescribe is openAll that also returns what each PE's domain says
// of its transports (core.TransportDescriber), or "".
func openDescribe(t *testing.T, spec string, hosts []string, env map[string]string) ([]string, []string, []error) {
	t.Helper()
	desc := make([]string, len(hosts))
	names, errs := openLook(t, spec, hosts, env, func(pe int, d core.Domain) {
		if td, ok := d.(core.TransportDescriber); ok {
			desc[pe] = td.Transports()
		}
	})
	return names, desc, errs
}

// openLook is openAll that lets look see each PE's domain before it
// closes.
func openLook(t *testing.T, spec string, hosts []string, env map[string]string, look func(pe int, d core.Domain)) ([]string, []error) {
	t.Helper()
	jobLookup := jobEnv(t, env)
	boots := bootstrap.NewLocal(len(hosts))
	names := make([]string, len(hosts))
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	for pe, b := range boots {
		wg.Go(func() {
			cfg := &core.Config{Bootstrap: b, JobID: "select-test", Env: jobLookup, HostID: hosts[pe]}
			p, d, err := core.Open(cfg, spec)
			if err == nil {
				names[pe] = p.Name()
				look(pe, d)
				err = d.Close()
			}
			errs[pe] = errors.Join(err, b.Close())
		})
	}
	wg.Wait()
	return names, errs
}

// The composite relays other PEs' operations where its inter-host
// transport does (core.Relayer): ntbring's lanes land what comes for
// every PE of their host; tcp carries each PE's own.
func TestRelays(t *testing.T) {
	for _, c := range []struct {
		spec, want string
		relays     bool
	}{
		{"tcp", "tcp+loopback", false},
		{"ntbring", "ntbring+loopback", true},
	} {
		t.Run(c.spec, func(t *testing.T) {
			hosts := []string{"a", "a", "b", "b"}
			relays := make([]bool, len(hosts))
			names, errs := openLook(t, c.spec, hosts, nil, func(pe int, d core.Domain) {
				r, ok := d.(core.Relayer)
				relays[pe] = ok && r.Relays()
			})
			for pe := range hosts {
				require.NoError(t, errs[pe], "PE %d", pe)
				require.Equal(t, c.want, names[pe], "PE %d", pe)
				require.Equal(t, c.relays, relays[pe], "PE %d", pe)
			}
		})
	}
}

// Which provider a job gets: the composite only when the job spans hosts
// with several PEs on some host and GOSHMEM_HYBRID allows it.
func TestSelection(t *testing.T) {
	for _, c := range []struct {
		name  string
		hosts []string
		env   map[string]string
		want  string
	}{
		{"two hosts of two", []string{"a", "a", "b", "b"}, nil, "tcp+loopback"},
		{"uneven hosts", []string{"a", "b", "b"}, nil, "tcp+loopback"},
		{"intra-host part off", []string{"a", "a", "b", "b"}, map[string]string{core.EnvHybrid: "0"}, "tcp"},
		{"one host", []string{"a", "a"}, nil, "tcp"},
		{"one PE per host", []string{"a", "b"}, nil, "tcp"},
	} {
		t.Run(c.name, func(t *testing.T) {
			names, errs := openAll(t, "tcp", c.hosts, c.env)
			for pe := range names {
				require.NoError(t, errs[pe], "PE %d", pe)
				require.Equal(t, c.want, names[pe], "PE %d", pe)
			}
		})
	}
}

// A GOSHMEM_HYBRID that is neither on nor off fails every PE, naming it.
func TestHybridSettingBad(t *testing.T) {
	_, errs := openAll(t, "tcp", []string{"a", "a", "b", "b"}, map[string]string{core.EnvHybrid: "maybe"})
	for pe, err := range errs {
		var ee *core.EnvError
		require.ErrorAs(t, err, &ee, "PE %d", pe)
		require.Equal(t, core.EnvHybrid, ee.Var)
	}
}

// What SHMEM_INFO prints of the transports: which serves which pairs.
func TestTransports(t *testing.T) {
	_, desc, errs := openDescribe(t, "tcp", []string{"a", "b", "a", "c", "c"}, nil)
	for pe := range desc {
		require.NoError(t, errs[pe])
		require.Equal(t, "tcp between hosts, loopback between PEs of one host; host 0: PEs 0,2, host 1: PEs 1, host 2: PEs 3-4", desc[pe])
	}
}
