package launchtest

import (
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// slurm is the test binary's one Slurm: munged, slurmctld and slurmd of
// its own, on free ports, with their state in a temporary directory.
var slurm struct {
	once  sync.Once
	dir   string
	conf  string
	procs []*exec.Cmd // munged, slurmctld, slurmd: stopped in reverse
	skip  string      // why Slurm cannot run here
	err   error
}

// slurmCommands are the programs the Slurm tests need, with the Debian
// package of each.
var slurmCommands = [][2]string{
	{"munged", "munge"}, {"slurmctld", "slurmctld"}, {"slurmd", "slurmd"}, {"srun", "slurm-client"}, {"sinfo", "slurm-client"},
}

// startSlurm starts the test binary's Slurm once and returns the
// environment its srun needs; it skips where Slurm cannot run.
func startSlurm(t *testing.T) []string {
	t.Helper()
	slurm.once.Do(func() { slurm.skip, slurm.err = bootSlurm() })
	if slurm.skip != "" {
		t.Skip(slurm.skip)
	}
	require.NoError(t, slurm.err)
	return []string{"SLURM_CONF=" + slurm.conf}
}

// bootSlurm starts munged, slurmctld and slurmd, and waits until the node
// takes jobs. A missing program or a daemon that cannot start is a reason
// to skip, with the daemon's log.
func bootSlurm() (skip string, err error) {
	for _, c := range slurmCommands {
		if _, err := lookDaemon(c[0]); err != nil {
			return fmt.Sprintf("%s is not installed (apt-get install slurm-wlm munge, Debian's %s package): the Slurm launches are not tested", c[0], c[1]), nil
		}
	}
	if os.Geteuid() != 0 {
		return "not running as root: slurmd, which starts tasks as their user, must; the Slurm launches are not tested", nil
	}
	host, err := os.Hostname()
	if err != nil {
		return "", err
	}
	host, _, _ = strings.Cut(host, ".")
	dir, err := os.MkdirTemp("", "goshmem-slurm-")
	if err != nil {
		return "", err
	}
	slurm.dir = dir
	for _, d := range []string{"munge", "state", "spool", "log"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			return "", err
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	key := make([]byte, 1024)
	rand.Read(key)
	if err := os.WriteFile(filepath.Join(dir, "munge", "munge.key"), key, 0o400); err != nil {
		return "", err
	}
	ports, err := freePorts(2)
	if err != nil {
		return "", err
	}
	sock := filepath.Join(dir, "munge", "munge.socket")
	cluster := "gs" + filepath.Base(dir)[len("goshmem-slurm-"):]
	conf := fmt.Sprintf(`ClusterName=%s
SlurmctldHost=%s(127.0.0.1)
SlurmctldPort=%d
SlurmdPort=%d
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=%s
CredType=cred/munge
StateSaveLocation=%s/state
SlurmdSpoolDir=%s/spool
SlurmctldPidFile=%s/slurmctld.pid
SlurmdPidFile=%s/slurmd.pid
SlurmctldLogFile=%s/log/slurmctld.log
SlurmdLogFile=%s/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
NodeName=%s NodeAddr=127.0.0.1 CPUs=%d State=UNKNOWN
PartitionName=goshmem Nodes=%s Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
`, cluster, host, ports[0], ports[1], sock, dir, dir, dir, dir, dir, dir, host, runtime.NumCPU(), host)
	slurm.conf = filepath.Join(dir, "slurm.conf")
	if err := os.WriteFile(slurm.conf, []byte(conf), 0o644); err != nil {
		return "", err
	}
	env := append(cleanEnv(), "SLURM_CONF="+slurm.conf)
	daemons := [][]string{
		{"munged", "--foreground", "--force", "--socket=" + sock, "--key-file=" + filepath.Join(dir, "munge", "munge.key"),
			"--pid-file=" + filepath.Join(dir, "munge", "munged.pid"), "--log-file=" + filepath.Join(dir, "log", "munged.log"),
			"--seed-file=" + filepath.Join(dir, "munge", "munge.seed")},
		{"slurmctld", "-D", "-i", "-f", slurm.conf},
		{"slurmd", "-D", "-f", slurm.conf},
	}
	for i, d := range daemons {
		path, _ := lookDaemon(d[0])
		cmd := exec.Command(path, d[1:]...)
		cmd.Env = env
		cmd.Dir = dir
		logf, err := os.Create(filepath.Join(dir, "log", d[0]+".out"))
		if err != nil {
			return "", err
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		// Its own process group: a signal to the test's group does not
		// reach it, and stopping it never reaches the test. Should the
		// test binary die before TestMain stops it (a test's timeout),
		// the kernel ends it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
		err = cmd.Start()
		logf.Close()
		if err != nil {
			return fmt.Sprintf("%s cannot start: %v", d[0], err), nil
		}
		slurm.procs = append(slurm.procs, cmd)
		if i == 0 {
			if why := waitFor(10*time.Second, func() bool { _, err := os.Stat(sock); return err == nil }); why != "" {
				return "munged did not open its socket " + why + ": " + daemonLog("munged"), nil
			}
		}
	}
	sinfo, _ := lookDaemon("sinfo")
	var state string
	why := waitFor(60*time.Second, func() bool {
		cmd := exec.Command(sinfo, "-h", "-N", "-o", "%T")
		cmd.Env = env
		out, _ := cmd.Output()
		state = strings.TrimSpace(string(out))
		return state == "idle"
	})
	if why != "" {
		return fmt.Sprintf("Slurm's node did not become idle %s (sinfo says %q): slurmctld: %s; slurmd: %s",
			why, state, daemonLog("slurmctld"), daemonLog("slurmd")), nil
	}
	return "", nil
}

// lookDaemon finds a program in PATH or in the system directories where
// Debian puts daemons.
func lookDaemon(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin", "/usr/local/sbin"} {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// waitFor polls cond, an external daemon's state, until it holds or the
// time is up; it returns "" or says how long it waited.
func waitFor(d time.Duration, cond func() bool) string {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Sprintf("within %v", d)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return ""
}

// daemonLog is the end of a daemon's log, for a skip's reason.
func daemonLog(name string) string {
	var b []byte
	for _, f := range []string{name + ".log", name + ".out"} {
		if c, err := os.ReadFile(filepath.Join(slurm.dir, "log", f)); err == nil {
			b = append(b, c...)
		}
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 1500 {
		s = "..." + s[len(s)-1500:]
	}
	if s == "" {
		return "(no log)"
	}
	return s
}

// freePorts returns n TCP ports nothing listens on now.
func freePorts(n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// stopSlurm stops the daemons startSlurm started, slurmd first, and
// removes their directory.
func stopSlurm() {
	if len(slurm.procs) == 3 {
		// The last job's step daemons leave first.
		squeue, err := lookDaemon("squeue")
		if err == nil {
			waitFor(10*time.Second, func() bool {
				cmd := exec.Command(squeue, "-h")
				cmd.Env = append(cleanEnv(), "SLURM_CONF="+slurm.conf)
				out, err := cmd.Output()
				return err != nil || strings.TrimSpace(string(out)) == ""
			})
		}
	}
	for i := len(slurm.procs) - 1; i >= 0; i-- {
		cmd := slurm.procs[i]
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	slurm.procs = nil
	if slurm.dir != "" {
		// A job's step daemon, which slurmd started in its directory,
		// may outlive the job by a moment.
		waitFor(10*time.Second, func() bool { return len(stepDaemons(slurm.dir)) == 0 })
		os.RemoveAll(slurm.dir)
	}
}

// stepDaemons lists the slurmstepd processes that run in dir, where
// this test's slurmd runs (their environment is overwritten by their
// process title, their working directory is not).
func stepDaemons(dir string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil || strings.TrimSpace(string(comm)) != "slurmstepd" {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+"/")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// srunArgs is srun with plugin mpi on np tasks, more than the CPUs if so.
func srunArgs(mpi string, np int, prog ...string) []string {
	srun, _ := lookDaemon("srun")
	return append([]string{srun, "--mpi=" + mpi, "-n", fmt.Sprint(np), "--overcommit", "--kill-on-bad-exit=0"}, prog...)
}

func TestSrun(t *testing.T) {
	for _, tc := range []struct {
		mpi, iface string
	}{
		{"pmix", "srun through PMIx"},
		{"pmi2", "srun through PMI-2"},
	} {
		t.Run(tc.mpi, func(t *testing.T) {
			if tc.mpi == "pmix" {
				needPMIx(t)
			}
			env := startSlurm(t)
			ringshift, cring := programs(t)
			env = cleanEnv(env...)
			verified(t, env, tc.iface, "ringshift: 4 PEs, 200 rounds of 8192 bytes over loopback: verified",
				srunArgs(tc.mpi, 4, ringshift, "-rounds", "200")...)
			verified(t, env, tc.iface, "cring: 4 PEs, 100 rounds: verified", srunArgs(tc.mpi, 4, cring, "100")...)
			globalExit(t, env, srunArgs(tc.mpi, 4, cring, "1", "7")...)
			for _, argv := range [][]string{{ringshift, "-rounds", "1000000000"}, {cring, "1000000000"}} {
				// srun is told not to end the job when a task fails: the
				// others name the PE they lost, and end the job (a C
				// program's fatal error aborts it through PMIx, so srun
				// may report the killed task among those it ended).
				out, code := killOne(t, env, 4, 2, "SLURM_PROCID", argv[0], srunArgs(tc.mpi, 4, argv...)...)
				require.NotZero(t, code, "%s", out)
				require.Contains(t, out, "PE 2 lost", "%s", out)
				require.Regexp(t, `srun: error: .*tasks? [0-9,-]*: Killed`, out)
			}
		})
	}
}

// TestSrunPMIxFenceBounded: a PE that dies before it reaches the PMIx
// fence (srun, told not to, does not end the job) leaves the others
// waiting there only for GOSHMEM_JOIN_TIMEOUT; then they fail saying why.
func TestSrunPMIxFenceBounded(t *testing.T) {
	needPMIx(t)
	env := startSlurm(t)
	ringshift, _ := programs(t)
	start := time.Now()
	out, code := run(t, cleanEnv(append(env, "GOSHMEM_JOIN_TIMEOUT=3s")...), srunArgs("pmix", 4, "sh", "-c",
		`if [ "$SLURM_PROCID" = 2 ]; then exit 3; fi; exec "$0" -rounds 10`, ringshift)...)
	require.NotZero(t, code, "%s", out)
	require.Contains(t, out, "waiting for every PE at the launcher's PMIx fence", "%s", out)
	require.Contains(t, out, "task 2: Exited with exit code 3", "%s", out)
	require.Less(t, time.Since(start), time.Minute, "%s", out)
}

// TestSrunWithoutInterface: plain srun gives rank and size but no way to
// the other PEs; every PE says so, naming what it looked for.
func TestSrunWithoutInterface(t *testing.T) {
	env := startSlurm(t)
	ringshift, _ := programs(t)
	out, code := run(t, cleanEnv(env...), srunArgs("none", 2, ringshift, "-rounds", "1")...)
	require.NotZero(t, code, "%s", out)
	require.Contains(t, out, "found no launcher interface", "%s", out)
	require.NotContains(t, out, "malformed", "%s", out)
}
