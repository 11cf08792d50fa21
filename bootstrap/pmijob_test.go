package bootstrap

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap/pmi"
	"github.com/goshmem/goshmem/bootstrap/pmi/pmitest"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/netif"
)

// pmiJobs starts n PEs the way srun --mpi=pmi2 (version 2) or Hydra's
// mpiexec (version 1) would, each on a socket of its own to one fake
// launcher whose process mapping is mapping, and returns what JobFromEnv
// made of each; env adds variables to every PE's environment.
func pmiJobs(t *testing.T, version, n int, mapping string, env ...string) ([]Job, []error, *pmitest.Server) {
	t.Helper()
	srv := pmitest.NewServer(n)
	srv.Mapping = mapping
	jobs, errs := make([]Job, n), make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		require.NoError(t, err)
		f := os.NewFile(uintptr(fds[1]), "launcher")
		conn, err := net.FileConn(f)
		f.Close()
		require.NoError(t, err)
		wg.Go(func() { srv.Serve(conn, r) })
		kv := []string{pmi.EnvFD, strconv.Itoa(fds[0]), pmi.EnvRank, strconv.Itoa(r), pmi.EnvSize, strconv.Itoa(n),
			"GOSHMEM_JOIN_TIMEOUT", "5s"}
		if version == 2 {
			kv = append(kv, EnvSlurmRank, strconv.Itoa(r), EnvSlurmSize, strconv.Itoa(n), pmi.EnvJobID, pmitest.JobID)
		}
		wg.Go(func() {
			jobs[r], _, errs[r] = JobFromEnv(envMap(append(kv, env...)...))
		})
	}
	wg.Wait()
	require.Empty(t, srv.Errs())
	return jobs, errs, srv
}

// connectAll joins every PE of jobs to PE 0's store and has them gather
// once: the store is where the others dial it.
func connectAll(t *testing.T, jobs []Job) {
	t.Helper()
	bs := make([]core.Bootstrap, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for r := range jobs {
		wg.Go(func() {
			if bs[r], errs[r] = Connect(jobs[r], watchdog); errs[r] != nil {
				return
			}
			all, err := bs[r].Allgather([]byte(strconv.Itoa(r)))
			if err == nil && len(all) != len(jobs) {
				err = fmt.Errorf("gathered %d of %d", len(all), len(jobs))
			}
			errs[r] = err
		})
	}
	wg.Wait()
	for r, err := range errs {
		require.NoError(t, err, "PE %d", r)
	}
	closed := make(chan error, 1)
	go func() { closed <- bs[0].Close() }()
	for _, b := range bs[1:] {
		require.NoError(t, b.Close())
	}
	require.NoError(t, <-closed)
}

// With every PE on one node, as PMI's process mapping says, the store PE 0
// serves listens on the loopback address only: no other host can reach it
// while the job assembles, and every PE is told that address.
func TestPMIStoreOneNodeOnLoopback(t *testing.T) {
	for _, version := range []int{2, 1} {
		t.Run(fmt.Sprintf("PMI-%d", version), func(t *testing.T) {
			const n = 3
			jobs, errs, srv := pmiJobs(t, version, n, "(vector,(0,1,3))")
			for r, err := range errs {
				require.NoError(t, err, "PE %d", r)
			}
			require.NotNil(t, jobs[0].ln)
			ln := jobs[0].ln.Addr().(*net.TCPAddr)
			require.Equal(t, "127.0.0.1", ln.IP.String(), "the store listens on %v", ln)
			for r, job := range jobs {
				require.Equal(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(ln.Port)), job.Addr, "PE %d", r)
			}
			require.Equal(t, 1, srv.Asked("PMI_process_mapping"), "PE 0 alone asks where the PEs run")
			connectAll(t, jobs)
		})
	}
}

// On several nodes the store listens on one address of PE 0's host, the
// one its name resolves to, which it publishes; where the name resolves
// to no address of this host but loopback, every interface under the
// name, as the others may reach it there. Either way the PEs join.
func TestPMIStoreNodesOnHostAddress(t *testing.T) {
	for _, mapping := range []string{"(vector,(0,2,2))", "", "(vector,garbage)"} {
		t.Run("mapping="+mapping, func(t *testing.T) {
			jobs, errs, _ := pmiJobs(t, 2, 4, mapping)
			for r, err := range errs {
				require.NoError(t, err, "PE %d", r)
			}
			ln := jobs[0].ln.Addr().(*net.TCPAddr)
			host, _ := os.Hostname()
			if ln.IP.IsUnspecified() {
				require.Nil(t, hostAddr(host), "every interface only where %s resolves to no address of this host", host)
				require.Equal(t, net.JoinHostPort(host, strconv.Itoa(ln.Port)), jobs[1].Addr)
			} else {
				require.False(t, ln.IP.IsLoopback(), "PEs on other nodes cannot dial %v", ln)
				require.Equal(t, ln.String(), jobs[1].Addr)
			}
			connectAll(t, jobs)
		})
	}
}

// GOSHMEM_BOOTSTRAP_IFACE puts the store on that interface's address,
// whatever the mapping; an interface this host lacks is refused naming the
// variable and the interfaces it has.
func TestPMIStoreIface(t *testing.T) {
	lo := loopbackIface(t)
	jobs, errs, srv := pmiJobs(t, 2, 2, "(vector,(0,2,1))", EnvIface, lo)
	for r, err := range errs {
		require.NoError(t, err, "PE %d", r)
	}
	require.Zero(t, srv.Asked("PMI_process_mapping"), "the interface decides")
	require.True(t, jobs[0].ln.Addr().(*net.TCPAddr).IP.IsLoopback())
	require.Equal(t, jobs[0].ln.Addr().String(), jobs[1].Addr)
	connectAll(t, jobs)

	_, errs, _ = pmiJobs(t, 2, 2, "(vector,(0,1,2))", EnvIface, "nosuch0", "GOSHMEM_JOIN_TIMEOUT", "1s")
	var ee *core.EnvError
	require.ErrorAs(t, errs[0], &ee)
	require.Equal(t, EnvIface, ee.Var)
	require.ErrorContains(t, errs[0], "this host has "+lo)
	require.Error(t, errs[1], "PE 1 gives up at the fence PE 0 never reached")
}

// A store at a GOSHMEM_BOOTSTRAP that names an address of this host
// listens there only; one that names a host listens on every interface,
// since the other PEs' nodes may resolve the name otherwise.
func TestAddrStorePlace(t *testing.T) {
	p, err := addrStorePlace("", "127.0.0.1:29500")
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", p.listen)
	p, err = addrStorePlace("", "node01:29500")
	require.NoError(t, err)
	require.Equal(t, "", p.listen)
	require.Equal(t, "node01", p.publish)
	p, err = addrStorePlace(loopbackIface(t), "node01:29500")
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", p.listen)
	require.Equal(t, "node01", p.publish)
	_, err = addrStorePlace("nosuch0", "node01:29500")
	require.ErrorContains(t, err, EnvIface+`="nosuch0"`)
}

// loopbackIface names this host's loopback interface.
func loopbackIface(t *testing.T) string {
	t.Helper()
	ifs, err := net.Interfaces()
	require.NoError(t, err)
	for _, f := range ifs {
		if f.Flags&net.FlagLoopback != 0 && f.Flags&net.FlagUp != 0 {
			if ip, err := netif.Addr(f.Name); err == nil && ip.To4() != nil {
				return f.Name
			}
		}
	}
	t.Skip("no loopback interface with an IPv4 address")
	return ""
}
