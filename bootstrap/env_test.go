package bootstrap

import (
	"encoding/hex"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap/pmix"
	"github.com/goshmem/goshmem/core"
)

func envMap(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

const hexSecret = "000102030405060708090a0b0c0d0e0f"

var secretBytes, _ = hex.DecodeString(hexSecret)

func TestJobFromEnvLaunchers(t *testing.T) {
	cases := []struct {
		name string
		env  []string
		want Job
	}{
		{"oshrun", []string{EnvRank, "2", EnvSize, "4", EnvJobID, "j1a2b", EnvBootstrap, "127.0.0.1:4000", EnvSecret, hexSecret},
			Job{Rank: 2, Size: 4, JobID: "j1a2b", Secret: secretBytes, Addr: "127.0.0.1:4000", Launcher: LauncherOshrun, Interface: InterfaceOshrun}},
		{"oshrun wins over inherited slurm", []string{EnvRank, "0", EnvSize, "1", EnvJobID, "x", EnvBootstrap, "h:1", EnvSecret, hexSecret,
			EnvSlurmRank, "3", EnvSlurmSize, "8"},
			Job{Rank: 0, Size: 1, JobID: "x", Secret: secretBytes, Addr: "h:1", Launcher: LauncherOshrun, Interface: InterfaceOshrun}},
		{"srun", []string{EnvSlurmRank, "3", EnvSlurmSize, "8", EnvSlurmJobID, "1234", EnvSlurmStepID, "0", EnvBootstrap, "node01:29500",
			EnvSecret, hexSecret},
			Job{Rank: 3, Size: 8, JobID: "slurm-1234.0", Secret: secretBytes, Addr: "node01:29500", Launcher: LauncherSlurm, Interface: InterfaceBootstrap}},
		{"srun with secret and jobid override", []string{EnvSlurmRank, "0", EnvSlurmSize, "2", EnvSlurmJobID, "1234",
			EnvBootstrap, "[fe80::1%eth0]:29500", EnvSecret, hexSecret, EnvJobID, "mine"},
			Job{Rank: 0, Size: 2, JobID: "mine", Secret: secretBytes, Addr: "[fe80::1%eth0]:29500", Launcher: LauncherSlurm, Interface: InterfaceBootstrap}},
		{"srun without step, insecure", []string{EnvSlurmRank, "1", EnvSlurmSize, "2", EnvSlurmJobID, "77", EnvBootstrap, ":29500",
			EnvInsecure, "1"},
			Job{Rank: 1, Size: 2, JobID: "slurm-77", Addr: ":29500", Launcher: LauncherSlurm, Insecure: true, Interface: InterfaceBootstrap}},
		{"srun single task needs no store", []string{EnvSlurmRank, "0", EnvSlurmSize, "1", EnvSlurmJobID, "5"},
			Job{Rank: 0, Size: 1, JobID: "slurm-5", Launcher: LauncherSlurm}},
		{"open mpi", []string{EnvOMPIRank, "1", EnvOMPISize, "2", envPMIxNamespace, "prterun-host-123@1", EnvBootstrap, "h:2",
			EnvSlurmRank, "0", EnvSlurmSize, "1", EnvSecret, hexSecret},
			Job{Rank: 1, Size: 2, JobID: "ompi-prterun-host-123_1", Secret: secretBytes, Addr: "h:2", Launcher: LauncherOpenMPI, Interface: InterfaceBootstrap}},
		{"open mpi without namespace", []string{EnvOMPIRank, "0", EnvOMPISize, "2", EnvBootstrap, "h:2", EnvSecret, hexSecret},
			Job{Rank: 0, Size: 2, JobID: "openmpi-h_2", Secret: secretBytes, Addr: "h:2", Launcher: LauncherOpenMPI, Interface: InterfaceBootstrap}},
		{"mpirun's PMIx, replaced by GOSHMEM_BOOTSTRAP", []string{EnvOMPIRank, "1", EnvOMPISize, "2", pmix.EnvNamespace, "123", pmix.EnvRank, "1",
			EnvBootstrap, "h:2", EnvSecret, hexSecret},
			Job{Rank: 1, Size: 2, JobID: "ompi-123", Secret: secretBytes, Addr: "h:2", Launcher: LauncherOpenMPI, Interface: InterfaceBootstrap}},
		{"hydra", []string{EnvPMIRank, "5", EnvPMISize, "6", EnvBootstrap, "10.0.0.1:7000", EnvSecret, " " + hexSecret + "\n"},
			Job{Rank: 5, Size: 6, JobID: "hydra-10.0.0.1_7000", Secret: secretBytes, Addr: "10.0.0.1:7000", Launcher: LauncherHydra, Interface: InterfaceBootstrap}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job, launched, err := JobFromEnv(envMap(tc.env...))
			require.NoError(t, err)
			require.True(t, launched)
			tc.want.JoinTimeout = DefaultJoinTimeout
			if tc.want.Launcher != LauncherOshrun {
				tc.want.DeadAfter = DefaultDeadAfter
			}
			require.Equal(t, tc.want, job)
		})
	}
}

func TestJobFromEnvNotLaunched(t *testing.T) {
	for _, env := range [][]string{nil, {EnvBootstrap, "node01:29500"}, {EnvJobID, "x"}, {EnvRank, ""}} {
		job, launched, err := JobFromEnv(envMap(env...))
		require.NoError(t, err)
		require.False(t, launched)
		require.Equal(t, 0, job.Rank)
		require.Equal(t, 1, job.Size)
		require.Equal(t, LauncherNone, job.Launcher)
		require.NotEmpty(t, job.JobID)
		_, err = checkJobID(job.JobID)
		require.NoError(t, err)
	}
}

func TestJobFromEnvMalformed(t *testing.T) {
	osh := func(override ...string) []string {
		base := map[string]string{EnvRank: "1", EnvSize: "4", EnvJobID: "j", EnvBootstrap: "127.0.0.1:4000", EnvSecret: hexSecret}
		for i := 0; i < len(override); i += 2 {
			if override[i+1] == "<unset>" {
				delete(base, override[i])
			} else {
				base[override[i]] = override[i+1]
			}
		}
		var kv []string
		for k, v := range base {
			kv = append(kv, k, v)
		}
		return kv
	}
	cases := []struct {
		name    string
		env     []string
		badVar  string
		allowed string
	}{
		{"rank not a number", osh(EnvRank, "one"), EnvRank, "an integer from 0 to 3"},
		{"rank negative", osh(EnvRank, "-1"), EnvRank, "from 0 to 3"},
		{"rank equals size", osh(EnvRank, "4"), EnvRank, "from 0 to 3"},
		{"rank beyond size", osh(EnvRank, "99"), EnvRank, "from 0 to 3"},
		{"size zero", osh(EnvSize, "0"), EnvSize, "an integer from 1"},
		{"size not a number", osh(EnvSize, "4x"), EnvSize, "an integer from 1"},
		{"size missing", osh(EnvSize, "<unset>"), EnvSize, "set together with " + EnvRank},
		{"size huge", osh(EnvSize, "99999999999"), EnvSize, "an integer from 1"},
		{"size without rank", []string{EnvSize, "4"}, EnvSize, "only together with " + EnvRank},
		{"jobid missing", osh(EnvJobID, "<unset>"), EnvJobID, "oshrun sets it"},
		{"jobid with slash", osh(EnvJobID, "../etc"), EnvJobID, "letters, digits"},
		{"jobid hidden", osh(EnvJobID, ".x"), EnvJobID, "not starting with '.'"},
		{"jobid too long", osh(EnvJobID, strings.Repeat("a", 65)), EnvJobID, "1 to 64"},
		{"bootstrap missing", osh(EnvBootstrap, "<unset>"), EnvBootstrap, "host:port"},
		{"bootstrap without port", osh(EnvBootstrap, "node01"), EnvBootstrap, "host:port"},
		{"bootstrap bad port", osh(EnvBootstrap, "node01:http"), EnvBootstrap, "port from 1 to 65535"},
		{"bootstrap port zero", osh(EnvBootstrap, "node01:0"), EnvBootstrap, "port from 1 to 65535"},
		{"bootstrap port too big", osh(EnvBootstrap, "node01:70000"), EnvBootstrap, "port from 1 to 65535"},
		{"secret missing", osh(EnvSecret, "<unset>"), EnvSecret, "oshrun sets it"},
		{"secret not hex", osh(EnvSecret, "zz"+hexSecret[2:]), EnvSecret, "in hex"},
		{"secret odd length", osh(EnvSecret, hexSecret+"0"), EnvSecret, "in hex"},
		{"secret too short", osh(EnvSecret, "00ff"), EnvSecret, "32 to 128 hex digits"},
		{"secret and file", osh(EnvSecretFile, "/x"), EnvSecretFile, "set only one"},
		{"secret file missing", osh(EnvSecret, "<unset>", EnvSecretFile, "/nonexistent/secret"), EnvSecretFile, "no such file"},
		{"srun size missing", []string{EnvSlurmRank, "0", EnvBootstrap, "h:1"}, EnvSlurmSize, "set together with " + EnvSlurmRank},
		{"srun rank not a number", []string{EnvSlurmRank, "x", EnvSlurmSize, "2", EnvBootstrap, "h:1"}, EnvSlurmRank, "from 0 to 1"},
		{"srun rank >= size", []string{EnvSlurmRank, "2", EnvSlurmSize, "2", EnvBootstrap, "h:1"}, EnvSlurmRank, "from 0 to 1"},
		{"srun size zero", []string{EnvSlurmRank, "0", EnvSlurmSize, "0", EnvBootstrap, "h:1"}, EnvSlurmSize, "from 1"},
		{"srun needs bootstrap", []string{EnvSlurmRank, "0", EnvSlurmSize, "2"}, EnvBootstrap, "free port on the node of PE 0"},
		{"srun needs bootstrap with PMIx's rank but no namespace", []string{EnvSlurmRank, "0", EnvSlurmSize, "2", pmix.EnvRank, "0"}, EnvBootstrap, "no PMIx or PMI"},
		{"srun bad bootstrap", []string{EnvSlurmRank, "0", EnvSlurmSize, "2", EnvBootstrap, "h:1:2"}, EnvBootstrap, "host:port"},
		{"srun bad secret", []string{EnvSlurmRank, "0", EnvSlurmSize, "2", EnvBootstrap, "h:1", EnvSecret, "nothex"}, EnvSecret, "in hex"},
		{"srun bad jobid", []string{EnvSlurmRank, "0", EnvSlurmSize, "2", EnvBootstrap, "h:1", EnvJobID, "a b"}, EnvJobID, "letters"},
		{"mpirun rank >= size", []string{EnvOMPIRank, "3", EnvOMPISize, "3", EnvBootstrap, "h:1"}, EnvOMPIRank, "from 0 to 2"},
		{"mpirun size missing", []string{EnvOMPIRank, "0", EnvBootstrap, "h:1"}, EnvOMPISize, "set together"},
		{"mpirun needs bootstrap", []string{EnvOMPIRank, "0", EnvOMPISize, "2"}, EnvBootstrap, "required"},
		{"hydra rank not a number", []string{EnvPMIRank, "0x1", EnvPMISize, "2", EnvBootstrap, "h:1"}, EnvPMIRank, "an integer"},
		{"hydra size zero", []string{EnvPMIRank, "0", EnvPMISize, "0", EnvBootstrap, "h:1"}, EnvPMISize, "from 1"},
		{"hydra needs bootstrap", []string{EnvPMIRank, "1", EnvPMISize, "2"}, EnvBootstrap, "required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := JobFromEnv(envMap(tc.env...))
			var ee *core.EnvError
			require.ErrorAs(t, err, &ee)
			require.ErrorIs(t, err, core.ErrInvalid)
			require.Equal(t, tc.badVar, ee.Var)
			require.Contains(t, ee.Allowed, tc.allowed)
		})
	}
}

func TestSecretFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), mode))
		require.NoError(t, os.Chmod(p, mode)) // not subject to the umask
		return p
	}
	env := func(path string) func(string) (string, bool) {
		return envMap(EnvRank, "0", EnvSize, "2", EnvJobID, "j", EnvBootstrap, "h:1", EnvSecretFile, path)
	}

	good := write("good", hexSecret+"\n", 0o600)
	job, _, err := JobFromEnv(env(good))
	require.NoError(t, err)
	require.Equal(t, secretBytes, job.Secret)

	for _, tc := range []struct {
		name, content string
		mode          os.FileMode
		allowed       string
	}{
		{"group readable", hexSecret, 0o640, "mode 0640"},
		{"world readable", hexSecret, 0o604, "mode 0604"},
		{"not hex", "not a secret at all, definitely!", 0o600, "in hex"},
		{"empty", "", 0o600, "in hex"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := write(tc.name, tc.content, tc.mode)
			_, _, err := JobFromEnv(env(p))
			var ee *core.EnvError
			require.ErrorAs(t, err, &ee)
			require.Equal(t, EnvSecretFile, ee.Var)
			require.Equal(t, p, ee.Value, "errors show the path, never the secret")
			require.Contains(t, ee.Allowed, tc.allowed)
		})
	}
	t.Run("directory", func(t *testing.T) {
		_, _, err := JobFromEnv(env(dir))
		var ee *core.EnvError
		require.ErrorAs(t, err, &ee)
		require.Contains(t, ee.Allowed, "regular file")
	})
}

func TestConnectOshrun(t *testing.T) {
	const n = 3
	ts := startStore(t, n, secretBytes)
	bs := make([]core.Bootstrap, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for r := range bs {
		wg.Go(func() {
			job, launched, err := JobFromEnv(envMap(EnvRank, strconv.Itoa(r), EnvSize, strconv.Itoa(n),
				EnvJobID, "j", EnvBootstrap, ts.addr, EnvSecret, hexSecret))
			if err != nil || !launched {
				errs[r] = fmt.Errorf("launched=%v: %v", launched, err)
				return
			}
			if bs[r], err = Connect(job, watchdog); err != nil {
				errs[r] = err
				return
			}
			all, err := bs[r].Allgather([]byte{byte(r)})
			if err == nil && len(all) != n {
				err = fmt.Errorf("got %d contributions", len(all))
			}
			errs[r] = err
		})
	}
	wg.Wait()
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	for _, b := range bs {
		require.NoError(t, b.Close())
	}
}

// TestConnectSlurm runs a job the way srun would start it: PE 0 serves the
// store on the port of GOSHMEM_BOOTSTRAP and stays up until every PE left.
func TestConnectSlurm(t *testing.T) {
	captureWarnings(t)
	for _, secret := range []string{"", hexSecret} {
		t.Run("secret="+strconv.FormatBool(secret != ""), func(t *testing.T) {
			const n = 4
			addr := net.JoinHostPort("127.0.0.1", freePort(t))
			bs := make([]core.Bootstrap, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			// Start the others first: they must wait for PE 0's store.
			for r := n - 1; r >= 0; r-- {
				wg.Go(func() {
					kv := []string{EnvSlurmRank, strconv.Itoa(r), EnvSlurmSize, strconv.Itoa(n),
						EnvSlurmJobID, "42", EnvSlurmStepID, "1", EnvBootstrap, addr}
					if secret != "" {
						kv = append(kv, EnvSecret, secret)
					} else {
						kv = append(kv, EnvInsecure, "1")
					}
					job, _, err := JobFromEnv(envMap(kv...))
					if err != nil {
						errs[r] = err
						return
					}
					if job.JobID != "slurm-42.1" {
						errs[r] = fmt.Errorf("job id %q", job.JobID)
						return
					}
					if bs[r], err = Connect(job, watchdog); err != nil {
						errs[r] = err
						return
					}
					for k := range 20 {
						all, err := bs[r].Allgather([]byte(strconv.Itoa(r * k)))
						if err != nil {
							errs[r] = err
							return
						}
						for pe, d := range all {
							if string(d) != strconv.Itoa(pe*k) {
								errs[r] = fmt.Errorf("round %d: PE %d sent %q", k, pe, d)
								return
							}
						}
					}
				})
			}
			wg.Wait()
			for r, err := range errs {
				require.NoError(t, err, "rank %d", r)
			}

			// PE 0's Close waits for the others; close them after it.
			closed := make(chan error, 1)
			go func() { closed <- bs[0].Close() }()
			for _, b := range bs[1:] {
				select {
				case err := <-closed:
					t.Fatalf("PE 0 closed the store while others were members: %v", err)
				default:
				}
				require.NoError(t, b.Close())
				require.NoError(t, b.Err())
			}
			select {
			case err := <-closed:
				require.NoError(t, err)
			case <-time.After(watchdog):
				t.Fatal("PE 0's Close did not return after every PE left")
			}
		})
	}
}

func TestConnectSlurmRankZeroGone(t *testing.T) {
	// When PE 0 (the store's host) dies, the others see PE 0 lost.
	addr := net.JoinHostPort("127.0.0.1", freePort(t))
	env := func(r int) Job {
		job, _, err := JobFromEnv(envMap(EnvSlurmRank, strconv.Itoa(r), EnvSlurmSize, "2", EnvBootstrap, addr, EnvSecret, hexSecret))
		require.NoError(t, err)
		return job
	}
	var b0, b1 core.Bootstrap
	var err0, err1 error
	var wg sync.WaitGroup
	wg.Go(func() { b0, err0 = Connect(env(0), watchdog) })
	wg.Go(func() { b1, err1 = Connect(env(1), watchdog) })
	wg.Wait()
	require.NoError(t, err0)
	require.NoError(t, err1)
	c0 := b0.(*Client)
	// Simulate PE 0's process dying: its store and connection vanish.
	require.NoError(t, c0.server.Close())
	require.NoError(t, <-c0.serveDone)
	crash(c0)
	_, err := b1.Allgather(nil)
	var pl *core.PeerLostError
	require.ErrorAs(t, err, &pl)
	require.Equal(t, 0, pl.PE)
	require.Contains(t, pl.Reason, "hosted by PE 0")
	require.NoError(t, b1.Close())
}

func TestConnectSinglePE(t *testing.T) {
	job, launched, err := JobFromEnv(envMap())
	require.NoError(t, err)
	require.False(t, launched)
	b, err := Connect(job, time.Second)
	require.NoError(t, err)
	all, err := b.Allgather([]byte("me"))
	require.NoError(t, err)
	require.Equal(t, [][]byte{[]byte("me")}, all)
	require.NoError(t, b.Close())

	_, err = Connect(Job{Size: 2, Rank: 0}, time.Second)
	require.ErrorIs(t, err, core.ErrInvalid)
}

// A malformed secret's error gives its length, never its value: a secret
// one digit too long, or with one character wrong, is nearly the secret.
func TestMalformedSecretNotEchoed(t *testing.T) {
	for _, bad := range []string{hexSecret + "0", hexSecret[:31] + "z", strings.Repeat(hexSecret, 5)} {
		_, _, err := JobFromEnv(envMap(EnvRank, "0", EnvSize, "2", EnvJobID, "j", EnvBootstrap, "h:1", EnvSecret, bad))
		require.Error(t, err)
		require.Contains(t, err.Error(), EnvSecret)
		require.Contains(t, err.Error(), fmt.Sprintf("(set, %d characters, not shown)", len(bad)))
		require.NotContains(t, err.Error(), hexSecret[:12])
	}
	_, _, err := JobFromEnv(envMap(EnvRank, "0", EnvSize, "2", EnvJobID, "j", EnvBootstrap, "h:1"))
	require.ErrorContains(t, err, EnvSecret+" is not set", "an unset secret is not called malformed")
	require.NotContains(t, err.Error(), "malformed")
}

// TestNoLauncherSaysWhatWasLookedFor: srun without --mpi and without
// GOSHMEM_BOOTSTRAP gives a rank and a size but no way to the others;
// the message says so and names every interface looked for, instead of
// calling an unset variable malformed.
func TestNoLauncherSaysWhatWasLookedFor(t *testing.T) {
	for _, env := range [][]string{
		{EnvSlurmRank, "1", EnvSlurmSize, "4"},
		{EnvOMPIRank, "1", EnvOMPISize, "4"},
	} {
		_, launched, err := JobFromEnv(envMap(env...))
		require.True(t, launched)
		var nl *NoLauncherError
		require.ErrorAs(t, err, &nl)
		require.ErrorIs(t, err, core.ErrInvalid)
		msg := err.Error()
		require.NotContains(t, msg, "malformed")
		require.Contains(t, msg, "PE 1 of 4")
		require.Contains(t, msg, "found no launcher interface")
		for _, want := range []string{"oshrun", "PMIx", "PMI-2", "PMI-1", EnvBootstrap, pmix.EnvNamespace, "PMI_FD", "PMI_PORT"} {
			require.Contains(t, msg, want)
		}
	}
}

// TestPMIxWithoutLibrary: a PE a PMIx launcher started, on a host where
// the PMIx library cannot be loaded, fails with one line naming the
// library and the package that provides it.
func TestPMIxWithoutLibrary(t *testing.T) {
	for _, env := range [][]string{
		{pmix.EnvNamespace, "slurm.pmix.7.0", pmix.EnvRank, "1", EnvSlurmRank, "1", EnvSlurmSize, "2"},
		{pmix.EnvNamespace, "1234", pmix.EnvRank, "0", EnvOMPIRank, "0", EnvOMPISize, "2"},
		{pmix.EnvNamespace, "prterun-x@1", pmix.EnvRank, "0"},
	} {
		env = append(env, pmix.EnvLibrary, "libpmix-absent-for-this-test.so.2")
		_, launched, err := JobFromEnv(envMap(env...))
		require.True(t, launched)
		var le *pmix.LibError
		require.ErrorAs(t, err, &le)
		require.ErrorIs(t, err, core.ErrNotSupported)
		msg := err.Error()
		require.NotContains(t, msg, "\n")
		require.Contains(t, msg, "libpmix-absent-for-this-test.so.2")
		require.Contains(t, msg, "libpmix2")
	}
}

func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		job  Job
		want string
	}{
		{Job{}, "no launcher (a job of one PE)"},
		{Job{Launcher: LauncherOshrun, Interface: InterfaceOshrun}, "oshrun"},
		{Job{Launcher: LauncherSlurm, Interface: InterfacePMIx, PMIxVersion: "OpenPMIx 4.2.2"}, "srun through PMIx (OpenPMIx 4.2.2)"},
		{Job{Launcher: LauncherSlurm, Interface: InterfacePMI2}, "srun through PMI-2"},
		{Job{Launcher: LauncherHydra, Interface: InterfacePMI1}, "mpiexec (Hydra) through PMI-1"},
		{Job{Launcher: LauncherOpenMPI, Interface: InterfaceBootstrap}, "Open MPI's mpirun through " + EnvBootstrap},
		{Job{Launcher: LauncherSlurm}, "srun (a job of one PE)"},
	} {
		require.Equal(t, tc.want, tc.job.Describe())
	}
}

// FuzzDecodeStoreFacts: the store's address, secret and job id come from
// PE 0 through the launcher's key-value space. No input panics; what
// decodes is a dialable address, a secret of an allowed length and a safe
// job id; an error never holds the secret it was given.
func FuzzDecodeStoreFacts(f *testing.F) {
	f.Add("127.0.0.1:40000", hexSecret, "slurm-1a2b")
	f.Add("node01:1", hexSecret+hexSecret, "openmpi-0123456789abcdef")
	f.Add("[::1]:29500", "00", "x")
	f.Add("host", hexSecret, "../etc")
	f.Add("h:0", "zz"+hexSecret, "")
	f.Fuzz(func(t *testing.T, addr, secret, jobID string) {
		vals := map[string]string{pmiKeyStore: addr, pmiKeySecret: secret, pmiKeyJobID: jobID}
		a, s, id, err := decodeStoreFacts("PMIx", vals)
		if err != nil {
			require.ErrorIs(t, err, core.ErrInvalid)
			if len(strings.TrimSpace(secret)) >= 8 {
				require.NotContains(t, err.Error(), strings.TrimSpace(secret))
			}
			return
		}
		_, port, perr := net.SplitHostPort(a)
		require.NoError(t, perr)
		p, perr := strconv.Atoi(port)
		require.NoError(t, perr)
		require.True(t, p > 0 && p < 65536)
		require.True(t, len(s) >= minSecretLen && len(s) <= maxSecretLen)
		require.Equal(t, sanitizeJobID(id), id)
		require.NotEmpty(t, id)
	})
}

func TestDecodeStoreFactsNamesTheKey(t *testing.T) {
	good := map[string]string{pmiKeyStore: "127.0.0.1:4000", pmiKeySecret: hexSecret, pmiKeyJobID: "j"}
	a, s, id, err := decodeStoreFacts("PMIx", good)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:4000", a)
	require.Equal(t, secretBytes, s)
	require.Equal(t, "j", id)
	for key, bad := range map[string]string{pmiKeyStore: "nowhere", pmiKeySecret: "abc", pmiKeyJobID: "a/b"} {
		vals := maps.Clone(good)
		vals[key] = bad
		_, _, _, err := decodeStoreFacts("PMIx", vals)
		require.ErrorIs(t, err, core.ErrInvalid)
		require.Contains(t, err.Error(), "PMIx key "+key)
	}
}

// Reading the settings asks no launcher: a PMI or PMIx job's settings
// say whom Join must ask (the PMI socket and PMIx server named here do
// not exist), and a job that has nobody to ask is complete, its secret
// checked, without a store.
func TestReadSettingsAsksNobody(t *testing.T) {
	cases := []struct {
		name string
		env  []string
		want Settings
		err  string
	}{
		{"oshrun", []string{EnvRank, "1", EnvSize, "2", EnvJobID, "j", EnvBootstrap, "h:1", EnvSecret, hexSecret},
			Settings{Launched: true, JobIDSet: true, Job: Job{Rank: 1, Size: 2, JobID: "j", Secret: secretBytes, Addr: "h:1",
				Launcher: LauncherOshrun, Interface: InterfaceOshrun, JoinTimeout: DefaultJoinTimeout}}, ""},
		{"hydra through PMI-1", []string{EnvPMIRank, "1", EnvPMISize, "3", "PMI_FD", "97", EnvJoinTimeout, "5s", EnvInsecure, "yes"},
			Settings{Launched: true, Ask: AskPMI, Insecure: true, Job: Job{Rank: 1, Size: 3, JobID: "hydra-x", Launcher: LauncherHydra,
				JoinTimeout: 5 * time.Second, DeadAfter: DefaultDeadAfter}}, ""},
		{"srun through PMIx", []string{pmix.EnvNamespace, "slurm.pmix.7.0", pmix.EnvRank, "0", EnvSlurmRank, "0", EnvSlurmSize, "2",
			EnvIface, "eth0"},
			Settings{Launched: true, Ask: InterfacePMIx, Job: Job{Rank: -1, Launcher: LauncherSlurm, Interface: InterfacePMIx,
				JoinTimeout: DefaultJoinTimeout, DeadAfter: DefaultDeadAfter, Iface: "eth0"}}, ""},
		{"srun without a secret is refused before any store", []string{EnvSlurmRank, "0", EnvSlurmSize, "2", EnvSlurmJobID, "7", EnvBootstrap, "h:1"},
			Settings{}, EnvSecret},
		{"a malformed boolean names the variable", []string{EnvSlurmRank, "0", EnvSlurmSize, "2", EnvBootstrap, "h:1", EnvInsecure, "maybe"},
			Settings{}, EnvInsecure},
		{"no launcher", nil, Settings{}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, err := ReadSettings(envMap(tc.env...))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.True(t, st.Launched)
				return
			}
			require.NoError(t, err)
			if !tc.want.Launched {
				require.False(t, st.Launched)
				require.Equal(t, 1, st.Job.Size)
				return
			}
			if tc.want.Job.JobID == "hydra-x" {
				require.True(t, strings.HasPrefix(st.Job.JobID, "hydra-"), st.Job.JobID)
				st.Job.JobID = "hydra-x"
			}
			require.Equal(t, tc.want, st)
			if st.Ask == "" {
				job, err := st.Join(envMap(tc.env...))
				require.NoError(t, err)
				require.Equal(t, st.Job, job, "with nobody to ask, joining adds nothing")
			}
		})
	}
}
