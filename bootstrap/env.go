package bootstrap

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/goshmem/goshmem/bootstrap/pmi"
	"github.com/goshmem/goshmem/bootstrap/pmix"
	"github.com/goshmem/goshmem/core"
)

// The environment contract between a launcher and its PEs. oshrun sets the
// GOSHMEM_ variables; under a launcher with neither PMIx nor PMI (srun
// without --mpi) the user sets GOSHMEM_BOOTSTRAP (and a secret) and the
// launcher's own variables give rank and size.
const (
	EnvRank       = "GOSHMEM_RANK"        // this PE's rank, 0..size-1
	EnvSize       = "GOSHMEM_SIZE"        // the number of PEs
	EnvJobID      = "GOSHMEM_JOBID"       // the job's id (optional under srun/mpirun)
	EnvBootstrap  = "GOSHMEM_BOOTSTRAP"   // host:port of the store
	EnvSecret     = "GOSHMEM_SECRET"      // the job secret, hex
	EnvSecretFile = "GOSHMEM_SECRET_FILE" // a file (mode 0600) holding the secret in hex
	// EnvInsecure, set to 1, lets a job whose launcher gives no secret
	// run with an unauthenticated store; without it such a job is
	// refused. PE 0 then warns on standard error.
	EnvInsecure = "GOSHMEM_INSECURE"
	// EnvJoinTimeout bounds how long a PE waits for the job to assemble:
	// for the launcher's PMI fence, for the store to answer, and (PE 0)
	// for every PE to join it.
	EnvJoinTimeout = "GOSHMEM_JOIN_TIMEOUT"
	// EnvDeadAfter is how long a PE, or the store PE 0 serves, may send
	// nothing before the others lose it (Server.DeadAfter), under a
	// launcher other than oshrun (which sees its PEs' processes stop).
	EnvDeadAfter = "GOSHMEM_DEAD_AFTER"

	EnvSlurmRank   = "SLURM_PROCID"
	EnvSlurmSize   = "SLURM_NTASKS"
	EnvSlurmJobID  = "SLURM_JOB_ID"
	EnvSlurmStepID = "SLURM_STEP_ID"
	EnvOMPIRank    = "OMPI_COMM_WORLD_RANK"
	EnvOMPISize    = "OMPI_COMM_WORLD_SIZE"
	EnvPMIRank     = "PMI_RANK"
	EnvPMISize     = "PMI_SIZE"

	// Open MPI's job identity, used for the job id when present.
	envPMIxNamespace = "PMIX_NAMESPACE"
	envOMPIJobID     = "OMPI_MCA_ess_base_jobid"
)

// Launchers, as Job.Launcher names them.
const (
	LauncherNone    = ""        // not launched: a single PE
	LauncherOshrun  = "oshrun"  // goshmem's launcher, which runs the store
	LauncherSlurm   = "slurm"   // srun; PE 0 runs the store
	LauncherOpenMPI = "openmpi" // Open MPI's mpirun; PE 0 runs the store
	LauncherHydra   = "hydra"   // MPICH's mpiexec (Hydra); PE 0 runs the store
	LauncherPMIx    = "pmix"    // another PMIx launcher (PRRTE's prterun); PE 0 runs the store
)

// The interfaces through which a PE learns where the job's store is, as
// Job.Interface names them.
const (
	InterfaceNone      = ""           // a single PE: no store
	InterfaceOshrun    = "oshrun"     // oshrun's GOSHMEM_ variables
	InterfacePMIx      = "PMIx"       // the launcher's PMIx server, through libpmix
	InterfacePMI2      = "PMI-2"      // the launcher's PMI-2 socket
	InterfacePMI1      = "PMI-1"      // the launcher's PMI-1 socket
	InterfaceBootstrap = EnvBootstrap // the address the user set
)

// DefaultJoinTimeout is GOSHMEM_JOIN_TIMEOUT's default; MinJoinTimeout and
// MaxJoinTimeout bound it: below a second a loaded node misses it, above an
// hour a dead job looks alive.
const (
	DefaultJoinTimeout = 60 * time.Second
	MinJoinTimeout     = time.Second
	MaxJoinTimeout     = time.Hour
)

// DefaultDeadAfter is GOSHMEM_DEAD_AFTER's default; MinDeadAfter and
// MaxDeadAfter bound it: below two seconds a loaded node misses it, above
// an hour a stopped job looks alive. A PE stopped in a debugger for
// longer is lost too: debug with it raised.
const (
	DefaultDeadAfter = 30 * time.Second
	MinDeadAfter     = 2 * time.Second
	MaxDeadAfter     = time.Hour
)

// The keys PE 0 puts in the launcher's PMI key-value space.
const (
	pmiKeyStore  = "goshmem-store"
	pmiKeySecret = "goshmem-secret"
	pmiKeyJobID  = "goshmem-jobid"
)

// The bootstrap's variables, in the registry (core.Declare).
var (
	rankParam = core.Declare(core.Param{Env: EnvRank, Kind: core.KindInt, Default: "(from oshrun; srun's and mpirun's variables otherwise)",
		Help: "this PE's rank, 0 to the job size less 1"})[0]
	sizeParam = core.Declare(core.Param{Env: EnvSize, Kind: core.KindInt, Default: "(from oshrun; srun's and mpirun's variables otherwise)",
		Help: "the number of PEs, set together with " + EnvRank})[0]
	jobIDParam = core.Declare(core.Param{Env: EnvJobID, Default: "(from oshrun, else derived from the launcher)",
		Help: "the job's id: " + jobIDForms})[0]
	bootstrapParam = core.Declare(core.Param{Env: EnvBootstrap, Default: "(from oshrun, PMIx or PMI)",
		Help: "host:port of the bootstrap store; under a launcher without PMIx or PMI (srun without --mpi), PE 0 serves it there, so name a free port on PE 0's host"})[0]
	secretParam = core.Declare(core.Param{Env: EnvSecret, Default: "(from oshrun, PMIx or PMI)", Secret: true,
		Help: "the job secret in hex that authenticates the store; required under launchers without PMIx or PMI"})[0]
	secretFileParam = core.Declare(core.Param{Env: EnvSecretFile,
		Help: "a file (mode 0600) holding the job secret in hex, instead of " + EnvSecret})[0]
	insecureParam = core.Declare(core.Param{Env: EnvInsecure, Kind: core.KindBool, Default: "0",
		Help: "on runs a job that has no secret (no PMIx or PMI, no " + EnvSecret + ") unauthenticated, with a warning, instead of refusing it"})[0]
	deadAfterParam = core.Declare(core.Param{Env: EnvDeadAfter, Kind: core.KindDuration, Default: DefaultDeadAfter.String(),
		Help: "under srun, mpirun or mpiexec: how long a PE, or PE 0's store, may send nothing (its process stopped, its host unreachable) before the others lose it and their operations and Finalize fail naming it (2s to 1h; raise it to stop a PE in a debugger)"})[0]
	ifaceParam = core.Declare(core.Param{Env: EnvIface,
		Help: "under srun, mpirun or mpiexec: the network interface PE 0's bootstrap store listens on (its first IPv4 address, else IPv6); unset, the loopback address when PMIx or PMI says every PE is on PE 0's node, else the address PE 0's host name resolves to"})[0]
	joinTimeoutParam = core.Declare(core.Param{Env: EnvJoinTimeout, Kind: core.KindDuration, Default: DefaultJoinTimeout.String(),
		Help: "how long a PE waits for the job to assemble (the launcher's PMI fence, the store's answer, every PE joining) before giving up, naming who never came (1s to 1h)"})[0]
)

// ContractEnv lists the variables oshrun sets for its PEs. A launcher
// removes inherited copies before setting its own.
var ContractEnv = []string{EnvRank, EnvSize, EnvJobID, EnvBootstrap, EnvSecret, EnvSecretFile}

const (
	maxSize      = 1 << 20
	minSecretLen = 16 // bytes
	maxSecretLen = 64
	maxJobIDLen  = 64
)

// SecretLen is the length of the secrets NewSecret makes: 128 bits.
const SecretLen = 16

// Job is what a PE learns from its environment about the job it belongs to.
type Job struct {
	Rank, Size int
	JobID      string
	// Secret is the job's shared secret; empty means unauthenticated,
	// which JobFromEnv allows only with Insecure or for a job with no
	// store.
	Secret []byte
	// Insecure records that the user opted out of a secret
	// (GOSHMEM_INSECURE=1) for a job that has none; PE 0's Connect warns.
	Insecure bool
	// Addr is host:port of the store: the one oshrun runs, or the one PE
	// 0 serves under srun and mpirun. Empty only for single-PE jobs.
	Addr string
	// Launcher is one of the Launcher constants.
	Launcher string
	// JoinTimeout bounds the wait for the job to assemble
	// (GOSHMEM_JOIN_TIMEOUT).
	JoinTimeout time.Duration
	// DeadAfter is how long a member of the store PE 0 serves may send
	// nothing before it is lost (GOSHMEM_DEAD_AFTER); zero for oshrun's
	// jobs, whose store is the launcher's.
	DeadAfter time.Duration
	// Interface is how the job learned Addr and Secret: one of the
	// Interface constants.
	Interface string
	// PMIxVersion is the PMIx library's version, under a PMIx launcher.
	PMIxVersion string
	// Iface is the network interface PE 0's store listens on
	// (GOSHMEM_BOOTSTRAP_IFACE); empty, PE 0 chooses where its PEs are.
	Iface string

	// debug is SHMEM_DEBUG: the steps of joining go to standard error.
	debug bool

	// ln is the store's listener PE 0 opened before publishing its
	// address through PMI; Connect serves on it.
	ln net.Listener
	// pmix is the PMIx connection of a job launched through PMIx, which the
	// Client Connect returns keeps until it closes (PMIx_Finalize) or
	// aborts the job (PMIx_Abort).
	pmix *pmix.Client
}

// JobFromEnv reads the job from the environment (ReadSettings) and, where
// the launcher must be asked where the store is, asks it (Settings.Join);
// lookup nil means the process environment. launched is false when no
// launcher started this process: the caller then runs as the only PE (job
// has Size 1 and a fresh JobID). A malformed or missing variable is a
// *core.EnvError naming it.
//
// When a job of more than one PE finds the store through PMI or PMIx,
// JobFromEnv talks to the launcher (see pmiJob and pmixJob): it is then to
// be called once per process, and PE 0's Job holds the store's open
// listener, which Connect serves on.
func JobFromEnv(lookup func(string) (string, bool)) (job Job, launched bool, err error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	st, err := ReadSettings(lookup)
	if err != nil {
		return Job{}, st.Launched, err
	}
	job, err = st.Join(lookup)
	return job, st.Launched, err
}

// Settings is what the environment says about the job, read without
// talking to anyone: no launcher is asked, no port opened, no file but a
// secret file read. Join completes it into a Job.
type Settings struct {
	// Job is what the variables give. Under PMIx the rank and size are
	// not known yet (Rank is -1); under PMI the store's address, the
	// secret and the job id may come from the launcher.
	Job Job
	// Launched is false when no launcher started this process: Job is
	// then the only PE's.
	Launched bool
	// Ask is the launcher's interface Join must ask where the store is:
	// InterfacePMIx, AskPMI, or "" when the variables say all.
	Ask string
	// Insecure is GOSHMEM_INSECURE: a job that ends up without a secret
	// runs unauthenticated instead of being refused.
	Insecure bool
	// JobIDSet says GOSHMEM_JOBID gave the job id, which PE 0 under PMI
	// publishes instead of making one.
	JobIDSet bool
}

// AskPMI is Settings.Ask for a job that learns its store through PMI-1 or
// PMI-2 (which one, the launcher's PMI says).
const AskPMI = "PMI"

// ReadSettings reads the job's settings from the variables lookup gives
// (the job's environment, so shmem.WithEnv holds), through the registry's
// parsers. It talks to no launcher: Settings.Join does.
//
// The interface to the launcher is looked for in this order, so that
// variables inherited from an enclosing allocation do not win over the
// launcher that started the process: oshrun (GOSHMEM_RANK); PMIx
// (PMIX_NAMESPACE and PMIX_RANK: Open MPI's mpirun, srun --mpi=pmix);
// PMI-2 (Slurm's PMI_FD with PMI_JOBID) and PMI-1 (PMI_FD or PMI_PORT:
// MPICH's Hydra); else GOSHMEM_BOOTSTRAP, with the rank and size in the
// launcher's variables (OMPI_COMM_WORLD_RANK, SLURM_PROCID, PMI_RANK). A
// GOSHMEM_BOOTSTRAP the user set takes the place of the launcher's PMI
// or PMIx wherever that launcher gives the rank and size in variables too.
func ReadSettings(lookup func(string) (string, bool)) (Settings, error) {
	get := func(k string) (string, bool) {
		v, ok := lookup(k)
		v = strings.TrimSpace(v)
		return v, ok && v != ""
	}
	st := Settings{Launched: true}
	var err error
	// Under a PMIx launcher, GOSHMEM_BOOTSTRAP replaces PMIx only where
	// the launcher's own variables give the rank and size.
	rankVars := has(get, EnvOMPIRank) || has(get, EnvSlurmRank) || has(get, EnvPMIRank)
	switch {
	case has(get, rankParam):
		st.Job, err = oshrunJob(get)
	case pmix.Present(get) && !(has(get, bootstrapParam) && rankVars):
		st.Job, err = pmixLauncherJob(get)
	case has(get, EnvOMPIRank):
		st.Job, err = foreignJob(get, LauncherOpenMPI, EnvOMPIRank, EnvOMPISize, openMPIJobID)
	case has(get, EnvPMIRank) && !(has(get, EnvSlurmRank) && has(get, pmi.EnvJobID)):
		st.Job, err = foreignJob(get, LauncherHydra, EnvPMIRank, EnvPMISize, nil)
	case has(get, EnvSlurmRank):
		// Slurm's pmi2 plugin sets PMI_RANK too, with PMI_JOBID.
		st.Job, err = foreignJob(get, LauncherSlurm, EnvSlurmRank, EnvSlurmSize, slurmJobID)
	default:
		st.Launched = false
	}
	if !st.Launched {
		if v, ok := sizeParam.Lookup(get); ok {
			return Settings{}, &core.EnvError{Var: EnvSize, Value: v,
				Allowed: "only together with " + EnvRank + " (both are set by oshrun)"}
		}
		id, err := NewJobID()
		if err != nil {
			return Settings{}, err
		}
		return Settings{Job: Job{Rank: 0, Size: 1, JobID: "single-" + id}}, nil
	}
	job := &st.Job
	if err == nil {
		job.debug, err = core.DebugParam.Bool(get)
	}
	if err == nil {
		job.JoinTimeout, err = joinTimeout(get)
	}
	if err == nil && job.Launcher != LauncherOshrun {
		job.DeadAfter, err = deadAfter(get)
		job.Iface, _ = ifaceParam.Lookup(get)
	}
	if err == nil {
		st.Insecure, err = insecureParam.Bool(get)
	}
	if err != nil {
		return Settings{Launched: true}, err
	}
	_, st.JobIDSet = jobIDParam.Lookup(get)
	switch {
	case job.Interface == InterfacePMIx:
		st.Ask = InterfacePMIx
	case job.Addr == "" && job.Size > 1 && job.Launcher != LauncherOshrun:
		st.Ask = AskPMI
	default:
		// Nobody to ask: whether the job may run without a secret is
		// known now.
		if err := requireSecret(st.Insecure, job); err != nil {
			return Settings{Launched: true}, err
		}
	}
	return st, nil
}

// Join completes the settings into the job: where st.Ask says, it asks
// the launcher through lookup (PMIx or PMI reads its own variables) where
// the store is, PE 0 opening the store's listener and publishing it, and
// waits at the launcher's fence, bounded by the join timeout. Without a
// launcher to ask, it returns st.Job.
func (st Settings) Join(lookup func(string) (string, bool)) (Job, error) {
	job := st.Job
	if st.Ask == "" {
		return job, nil
	}
	var err error
	if st.Ask == InterfacePMIx {
		job, err = pmixJob(lookup, job)
	} else {
		job, err = pmiJob(lookup, job, st.JobIDSet)
	}
	if err == nil {
		err = requireSecret(st.Insecure, &job)
	}
	if err != nil {
		if job.pmix != nil {
			job.pmix.Finalize()
		}
		return Job{}, err
	}
	return job, nil
}

// has says whether the variable k (a name, or a core.Param of ours) is
// set and not empty.
func has[K string | core.Param](get func(string) (string, bool), k K) bool {
	switch k := any(k).(type) {
	case core.Param:
		_, ok := k.Lookup(get)
		return ok
	case string:
		_, ok := get(k)
		return ok
	}
	return false
}

func oshrunJob(get func(string) (string, bool)) (Job, error) {
	job := Job{Launcher: LauncherOshrun, Interface: InterfaceOshrun}
	var err error
	if job.Rank, job.Size, err = rankSize(get, rankParam.Env, sizeParam.Env); err != nil {
		return Job{}, err
	}
	id, ok := jobIDParam.Lookup(get)
	if !ok {
		return Job{}, &core.EnvError{Var: EnvJobID, Unset: true, Allowed: jobIDForms + " (oshrun sets it; is this PE's environment complete?)"}
	}
	if job.JobID, err = checkJobID(id); err != nil {
		return Job{}, err
	}
	if job.Addr, err = bootstrapAddr(get, true); err != nil {
		return Job{}, err
	}
	if job.Secret, err = secretFromEnv(get); err != nil {
		return Job{}, err
	}
	if job.Secret == nil {
		return Job{}, &core.EnvError{Var: EnvSecret, Unset: true,
			Allowed: secretForms + " (oshrun sets it, or " + EnvSecretFile + ")"}
	}
	return job, nil
}

func foreignJob(get func(string) (string, bool), launcher, rankVar, sizeVar string,
	jobID func(get func(string) (string, bool)) string) (Job, error) {
	job := Job{Launcher: launcher}
	var err error
	if job.Rank, job.Size, err = rankSize(get, rankVar, sizeVar); err != nil {
		return Job{}, err
	}
	// Without GOSHMEM_BOOTSTRAP, a launcher that offers PMI tells the PEs
	// where the store is; JobFromEnv asks it after this.
	needAddr := job.Size > 1 && (launcher == LauncherOpenMPI || !pmi.Present(get))
	if needAddr && !has(get, bootstrapParam) {
		return Job{}, &NoLauncherError{Rank: job.Rank, Size: job.Size, Launcher: launcher, RankVar: rankVar, SizeVar: sizeVar}
	}
	if job.Addr, err = bootstrapAddr(get, needAddr); err != nil {
		return Job{}, err
	}
	if job.Addr != "" {
		job.Interface = InterfaceBootstrap
	}
	if job.Secret, err = secretFromEnv(get); err != nil {
		return Job{}, err
	}
	if id, ok := jobIDParam.Lookup(get); ok {
		job.JobID, err = checkJobID(id)
		return job, err
	}
	if jobID != nil {
		job.JobID = jobID(get)
	}
	if job.JobID == "" && job.Addr != "" {
		// Every PE sees the same address, and two jobs cannot serve
		// stores on one address at once.
		job.JobID = sanitizeJobID(launcher + "-" + job.Addr)
	}
	if job.JobID == "" {
		id, err := NewJobID()
		if err != nil {
			return Job{}, err
		}
		job.JobID = launcher + "-" + id
	}
	return job, nil
}

// NoLauncherError is a PE of a job of several PEs whose launcher gave
// its rank and size but no way to find the others: no PMIx, no PMI and
// no GOSHMEM_BOOTSTRAP.
type NoLauncherError struct {
	Rank, Size       int
	Launcher         string // the launcher whose variables gave the rank
	RankVar, SizeVar string
}

func (e *NoLauncherError) Error() string {
	return fmt.Sprintf("bootstrap: PE %d of %d (from %s's %s and %s) found no launcher interface to reach the other PEs through; "+
		"looked for oshrun (%s), PMIx (%s and %s: srun --mpi=pmix, Open MPI's mpirun), PMI-2 (%s with %s: srun --mpi=pmi2), "+
		"PMI-1 (%s or %s: MPICH's mpiexec) and %s (host:port of a free port on PE 0's host), and none is set",
		e.Rank, e.Size, launcherName(e.Launcher), e.RankVar, e.SizeVar,
		EnvRank, pmix.EnvNamespace, pmix.EnvRank, pmi.EnvFD, pmi.EnvJobID, pmi.EnvFD, pmi.EnvPort, EnvBootstrap)
}

// Unwrap makes the error a *core.EnvError of the unset GOSHMEM_BOOTSTRAP,
// the one variable the user can set to run such a job.
func (e *NoLauncherError) Unwrap() error {
	return &core.EnvError{Var: EnvBootstrap, Unset: true,
		Allowed: addrForms + "; it is required for a job of more than one PE whose launcher offers no PMIx or PMI: set it to a free port on the node of PE 0"}
}

func slurmJobID(get func(string) (string, bool)) string {
	j, ok := get(EnvSlurmJobID)
	if !ok {
		return ""
	}
	if s, ok := get(EnvSlurmStepID); ok {
		j += "." + s
	}
	return sanitizeJobID("slurm-" + j)
}

func openMPIJobID(get func(string) (string, bool)) string {
	for _, k := range []string{envPMIxNamespace, envOMPIJobID} {
		if v, ok := get(k); ok {
			return sanitizeJobID("ompi-" + v)
		}
	}
	return ""
}

func rankSize(get func(string) (string, bool), rankVar, sizeVar string) (int, int, error) {
	sv, ok := get(sizeVar)
	if !ok {
		return 0, 0, &core.EnvError{Var: sizeVar, Unset: true,
			Allowed: fmt.Sprintf("an integer from 1 to %d, set together with %s", maxSize, rankVar)}
	}
	size, err := strconv.Atoi(sv)
	if err != nil || size < 1 || size > maxSize {
		return 0, 0, &core.EnvError{Var: sizeVar, Value: sv, Allowed: fmt.Sprintf("an integer from 1 to %d", maxSize)}
	}
	rv, _ := get(rankVar)
	rank, err := strconv.Atoi(rv)
	if err != nil || rank < 0 || rank >= size {
		return 0, 0, &core.EnvError{Var: rankVar, Value: rv,
			Allowed: fmt.Sprintf("an integer from 0 to %d (%s is %d)", size-1, sizeVar, size)}
	}
	return rank, size, nil
}

func joinTimeout(get func(string) (string, bool)) (time.Duration, error) {
	return joinTimeoutParam.Duration(get, MinJoinTimeout, MaxJoinTimeout)
}

// pmixLauncherJob is a job whose launcher speaks PMIx: the launcher is
// named from its other variables, the rank and size come from PMIx
// (pmixJob).
func pmixLauncherJob(get func(string) (string, bool)) (Job, error) {
	job := Job{Launcher: LauncherPMIx, Interface: InterfacePMIx, Rank: -1}
	switch {
	case has(get, EnvOMPIRank):
		job.Launcher = LauncherOpenMPI
	case has(get, EnvSlurmRank):
		job.Launcher = LauncherSlurm
	}
	var err error
	if job.Secret, err = secretFromEnv(get); err != nil {
		return Job{}, err
	}
	if id, ok := jobIDParam.Lookup(get); ok {
		if job.JobID, err = checkJobID(id); err != nil {
			return Job{}, err
		}
	}
	return job, nil
}

// serveStore is PE 0's part of a job a PMI or PMIx launcher started: a
// fresh secret where the environment gave none, a job id where newID
// says, the store's listener where place says, and the store's address,
// the secret and the job id published with put, which says what through.
func (job *Job) serveStore(place storePlace, newID bool, put func(key, value string) error, through string) error {
	var err error
	if job.Secret == nil {
		if job.Secret, err = NewSecret(); err != nil {
			return err
		}
	}
	if newID {
		id, err := NewJobID()
		if err != nil {
			return err
		}
		job.JobID = job.Launcher + "-" + id
	}
	if job.ln, err = net.Listen("tcp", net.JoinHostPort(place.listen, "0")); err != nil {
		return fmt.Errorf("bootstrap: PE 0 cannot open a port for the store (%s): %w", place.why, err)
	}
	_, port, _ := net.SplitHostPort(job.ln.Addr().String())
	job.Addr = net.JoinHostPort(place.publish, port)
	job.logJoin("store placed", "pe", 0, "listen", job.ln.Addr().String(), "why", place.why)
	for _, kv := range [][2]string{{pmiKeyStore, job.Addr}, {pmiKeySecret, hex.EncodeToString(job.Secret)}, {pmiKeyJobID, job.JobID}} {
		if err := put(kv[0], kv[1]); err != nil {
			return fmt.Errorf("bootstrap: PE 0 publishing %s through %s: %w", kv[0], through, err)
		}
	}
	return nil
}

// pmixJob learns the rank, the size, the store's address, the secret and
// the job id through the launcher's PMIx server, as pmiJob does through
// PMI: PE 0 opens the store's listener (on the loopback address when PMIx
// says every PE is on its node), puts its address, a fresh secret (or the
// one the environment gives) and job id, and commits; after the fence
// every PE reads them from rank 0. The connection stays open in job.pmix for
// the job's life: PMIx_Abort ends the job on a global exit, and
// PMIx_Finalize at the store client's Close makes the exit a clean one.
func pmixJob(lookup func(string) (string, bool), job Job) (Job, error) {
	c, err := pmix.Open(lookup, job.JoinTimeout)
	if err != nil {
		return Job{}, fmt.Errorf("bootstrap: %s: %w", launcherName(job.Launcher), err)
	}
	job.logJoin("PMIx initialized", "pe", c.Rank(), "npes", c.Size(), "namespace", c.Namespace(), "version", c.Version())
	ok := false
	defer func() {
		if !ok {
			c.Finalize()
			if job.ln != nil {
				job.ln.Close()
			}
		}
	}()
	job.Rank, job.Size, job.PMIxVersion = c.Rank(), c.Size(), c.Version()
	if job.Size == 1 {
		// Nobody to find: the connection ends here, so that the launcher
		// counts the exit as clean whenever it comes.
		if job.JobID == "" {
			job.JobID = sanitizeJobID("pmix-" + c.Namespace())
		}
		if err := c.Finalize(); err != nil {
			return Job{}, fmt.Errorf("bootstrap: PE 0 finalizing PMIx: %w", err)
		}
		ok = true
		return job, nil
	}
	if job.Rank == 0 {
		place, err := pmixStorePlace(job.Iface, c)
		if err != nil {
			return Job{}, err
		}
		if err := job.serveStore(place, job.JobID == "", c.Put, "PMIx"); err != nil {
			return Job{}, err
		}
		if err := c.Commit(); err != nil {
			return Job{}, fmt.Errorf("bootstrap: PE 0 publishing the store through PMIx: %w", err)
		}
		job.logJoin("store published through PMIx", "pe", 0, "addr", job.Addr)
	}
	job.logJoin("waiting at the PMIx fence", "pe", job.Rank)
	if err := c.Fence(); err != nil {
		return Job{}, fmt.Errorf("bootstrap: PE %d waiting for every PE at the launcher's PMIx fence: %w", job.Rank, err)
	}
	if job.Rank != 0 {
		vals := map[string]string{}
		for _, k := range []string{pmiKeyStore, pmiKeySecret, pmiKeyJobID} {
			if vals[k], err = c.Get(0, k); err != nil {
				return Job{}, fmt.Errorf("bootstrap: PE %d reading %s through PMIx (is PE 0 a goshmem program of this version?): %w", job.Rank, k, err)
			}
		}
		if job.Addr, job.Secret, job.JobID, err = decodeStoreFacts("PMIx", vals); err != nil {
			return Job{}, err
		}
	}
	job.pmix = c
	ok = true
	return job, nil
}

// decodeStoreFacts decodes what PE 0 published through the launcher's
// key-value space (via names it: PMI or PMIx), which another process
// wrote: the store's address, the job secret and the job id. An error
// names the key and what it must hold, never the secret's value.
func decodeStoreFacts(via string, vals map[string]string) (addr string, secret []byte, jobID string, err error) {
	if addr, err = bootstrapAddr(func(string) (string, bool) { return vals[pmiKeyStore], true }, true); err != nil {
		return "", nil, "", fmt.Errorf("bootstrap: %s key %s: %w", via, pmiKeyStore, err)
	}
	if secret, err = parseSecret(via+" key "+pmiKeySecret, vals[pmiKeySecret]); err != nil {
		return "", nil, "", fmt.Errorf("bootstrap: %w", err)
	}
	if jobID, err = checkJobID(vals[pmiKeyJobID]); err != nil {
		return "", nil, "", fmt.Errorf("bootstrap: %s key %s: %w", via, pmiKeyJobID, err)
	}
	return addr, secret, jobID, nil
}

// pmiJob learns the store's address, the secret and the job id through the
// launcher's PMI: PE 0 opens the store's listener on a free port and puts
// its address there, with a fresh secret (or the one the environment
// gives) and job id; after the fence every PE reads them. Only the job's
// processes see the key-value space, so the secret may cross it.
func pmiJob(lookup func(string) (string, bool), job Job, jobIDSet bool) (Job, error) {
	c, err := pmi.Open(lookup, job.JoinTimeout)
	if err != nil {
		return Job{}, fmt.Errorf("bootstrap: the launcher's PMI: %w", err)
	}
	job.logJoin("PMI opened", "pe", job.Rank, "version", c.Version(), "npes", c.Size())
	ok := false
	defer func() {
		if !ok {
			c.Close()
			if job.ln != nil {
				job.ln.Close()
			}
		}
	}()
	if c.Rank() != job.Rank || c.Size() != job.Size {
		return Job{}, fmt.Errorf("bootstrap: the launcher's PMI says rank %d of %d, its environment rank %d of %d: %w",
			c.Rank(), c.Size(), job.Rank, job.Size, core.ErrInvalid)
	}
	job.Interface = fmt.Sprintf("PMI-%d", c.Version())
	if job.Rank == 0 {
		place, err := pmiStorePlace(job.Iface, c)
		if err != nil {
			return Job{}, err
		}
		if err := job.serveStore(place, !jobIDSet, c.Put, "PMI"); err != nil {
			return Job{}, err
		}
		job.logJoin("store published through PMI", "pe", 0, "addr", job.Addr)
	}
	job.logJoin("waiting at the PMI fence", "pe", job.Rank)
	if err := c.Fence(); err != nil {
		return Job{}, fmt.Errorf("bootstrap: PE %d waiting for every PE at the launcher's PMI fence: %w", job.Rank, err)
	}
	if job.Rank != 0 {
		vals := map[string]string{}
		for _, k := range []string{pmiKeyStore, pmiKeySecret, pmiKeyJobID} {
			if vals[k], err = c.Get(k); err != nil {
				return Job{}, fmt.Errorf("bootstrap: PE %d reading %s through PMI (is PE 0 a goshmem program of this version?): %w", job.Rank, k, err)
			}
		}
		if job.Addr, job.Secret, job.JobID, err = decodeStoreFacts("PMI", vals); err != nil {
			return Job{}, err
		}
	}
	// PMI has done its part; finalizing now leaves the launcher nothing
	// to wait for from this process but its exit.
	if err := c.Finalize(); err != nil {
		return Job{}, fmt.Errorf("bootstrap: PE %d finalizing PMI: %w", job.Rank, err)
	}
	ok = true
	return job, nil
}

func deadAfter(get func(string) (string, bool)) (time.Duration, error) {
	return deadAfterParam.Duration(get, MinDeadAfter, MaxDeadAfter)
}

// requireSecret refuses a job with a store but no secret: anyone who
// reaches an unauthenticated store while the job assembles can take a rank
// that has not joined yet and read the others' job facts. oshrun and PMI
// always give one; a launcher without PMI gives none, so the user sets
// GOSHMEM_SECRET or GOSHMEM_SECRET_FILE, or opts out with
// GOSHMEM_INSECURE=1.
func requireSecret(insecure bool, job *Job) error {
	if job.Secret != nil || (job.Size == 1 && job.Addr == "") {
		return nil
	}
	if insecure {
		job.Insecure = true
		return nil
	}
	return fmt.Errorf("bootstrap: PE %d: %s without PMI gives the job no secret, and anyone who reaches an unauthenticated store at %s could join the job in a PE's place: %w",
		job.Rank, launcherName(job.Launcher), job.Addr, &core.EnvError{Var: EnvSecret, Unset: true,
			Allowed: secretForms + ", the same for every PE (such as export " + EnvSecret + "=$(openssl rand -hex 16) before launching), or " +
				EnvSecretFile + " naming a 0600 file that holds one on a file system every PE sees; or " +
				EnvInsecure + "=1 to run unauthenticated anyway"})
}

// Describe names the launcher that started the job and the interface
// through which its PEs found each other, for SHMEM_INFO: "srun through
// PMIx (OpenPMIx 4.2.2)", "mpiexec (Hydra) through PMI-1", "oshrun".
func (j Job) Describe() string {
	switch {
	case j.Launcher == LauncherNone:
		return "no launcher (a job of one PE)"
	case j.Launcher == LauncherOshrun:
		return "oshrun"
	case j.Interface == InterfacePMIx && j.PMIxVersion != "":
		return launcherName(j.Launcher) + " through PMIx (" + j.PMIxVersion + ")"
	case j.Interface != "":
		return launcherName(j.Launcher) + " through " + j.Interface
	}
	return launcherName(j.Launcher) + " (a job of one PE)"
}

// launcherName names a launcher for a message.
func launcherName(l string) string {
	switch l {
	case LauncherSlurm:
		return "srun"
	case LauncherOpenMPI:
		return "Open MPI's mpirun"
	case LauncherHydra:
		return "mpiexec (Hydra)"
	case LauncherOshrun:
		return "oshrun"
	case LauncherPMIx:
		return "the PMIx launcher"
	}
	return "the launcher"
}

// insecureWarning is where PE 0 warns of a job run without a secret.
var insecureWarning io.Writer = os.Stderr

const addrForms = `host:port of the bootstrap store, such as "node01:29500" or "10.0.0.1:29500"`

func bootstrapAddr(get func(string) (string, bool), required bool) (string, error) {
	v, ok := bootstrapParam.Lookup(get)
	if !ok {
		if required {
			return "", &core.EnvError{Var: EnvBootstrap, Unset: true,
				Allowed: addrForms + "; it is required for a job of more than one PE whose launcher offers no PMI (PMI_FD or PMI_PORT, as srun --mpi=pmi2 and MPICH's mpiexec do): set it to a free port on the node of PE 0"}
		}
		return "", nil
	}
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return "", &core.EnvError{Var: EnvBootstrap, Value: v, Allowed: addrForms}
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return "", &core.EnvError{Var: EnvBootstrap, Value: v, Allowed: addrForms + " with a port from 1 to 65535"}
	}
	return v, nil
}

const secretForms = "the job secret in hex, 32 to 128 hex digits (16 to 64 bytes)"

// secretFromEnv returns the secret, or nil if neither variable is set.
func secretFromEnv(get func(string) (string, bool)) ([]byte, error) {
	v, inline := secretParam.Lookup(get)
	path, fromFile := secretFileParam.Lookup(get)
	switch {
	case inline && fromFile:
		return nil, &core.EnvError{Var: EnvSecretFile, Value: path, Allowed: "unset when " + EnvSecret + " is set (set only one of them)"}
	case inline:
		return parseSecret(EnvSecret, v)
	case fromFile:
		return readSecretFile(path)
	}
	return nil, nil
}

// parseSecret decodes a secret read from the variable name. Its error
// gives the secret's length, never its value: a value one digit too long
// is the secret.
func parseSecret(name, v string) ([]byte, error) {
	b, err := hex.DecodeString(strings.TrimSpace(v))
	if err != nil || len(b) < minSecretLen || len(b) > maxSecretLen {
		return nil, &core.EnvError{Var: name, Value: v, Secret: true, Allowed: secretForms}
	}
	return b, nil
}

func readSecretFile(path string) ([]byte, error) {
	// Look before opening: opening a FIFO for reading blocks until a
	// writer comes, and a device may block or never end, so only a
	// regular file, only its owner may read, is ever opened.
	st, err := os.Stat(path)
	if err != nil {
		return nil, &core.EnvError{Var: EnvSecretFile, Value: path,
			Allowed: "a readable file holding " + secretForms + " (" + err.Error() + ")"}
	}
	if err := secretFileMode(path, st); err != nil {
		return nil, err
	}
	// O_NONBLOCK: should the path have become a FIFO since, the open
	// returns instead of waiting; the file opened must be the one checked.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, &core.EnvError{Var: EnvSecretFile, Value: path,
			Allowed: "a readable file holding " + secretForms + " (" + err.Error() + ")"}
	}
	defer f.Close()
	fst, err := f.Stat()
	if err != nil {
		return nil, &core.EnvError{Var: EnvSecretFile, Value: path, Allowed: "a readable file (" + err.Error() + ")"}
	}
	if !os.SameFile(st, fst) {
		return nil, &core.EnvError{Var: EnvSecretFile, Value: path, Allowed: "a file that is not replaced while it is read"}
	}
	if err := secretFileMode(path, fst); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return nil, &core.EnvError{Var: EnvSecretFile, Value: path, Allowed: "a readable file (" + err.Error() + ")"}
	}
	// The error names the file, never what it holds.
	secret, err := parseSecret(EnvSecretFile, string(b))
	if err != nil {
		return nil, &core.EnvError{Var: EnvSecretFile, Value: path,
			Allowed: fmt.Sprintf("a file holding %s; this one holds %d characters", secretForms, len(strings.TrimSpace(string(b))))}
	}
	return secret, nil
}

// secretFileMode refuses anything but a regular file only its owner can
// read or write.
func secretFileMode(path string, st os.FileInfo) error {
	if !st.Mode().IsRegular() {
		return &core.EnvError{Var: EnvSecretFile, Value: path,
			Allowed: "a regular file (mode 0600) holding " + secretForms + ", not " + fileKind(st.Mode())}
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return &core.EnvError{Var: EnvSecretFile, Value: path,
			Allowed: fmt.Sprintf("a file only its owner can read (mode 0600); this one has mode %04o: run chmod 600 %s", perm, path)}
	}
	return nil
}

// fileKind names what a path that is not a regular file is.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "a file of type " + m.Type().String()
}

const jobIDForms = "1 to 64 letters, digits, '.', '_' or '-', not starting with '.'"

func checkJobID(id string) (string, error) {
	if id == "" || len(id) > maxJobIDLen || id[0] == '.' || sanitizeJobID(id) != id {
		return "", &core.EnvError{Var: EnvJobID, Value: id, Allowed: jobIDForms}
	}
	return id, nil
}

// sanitizeJobID maps a launcher's identity to a job id that is safe in a
// file name (core.JobDir), the same way on every PE.
func sanitizeJobID(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) > maxJobIDLen {
		b = b[:maxJobIDLen]
	}
	if len(b) > 0 && b[0] == '.' {
		b[0] = '_'
	}
	return string(b)
}

// NewJobID returns a fresh random job id.
func NewJobID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("bootstrap: job id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// NewSecret returns a fresh random secret of SecretLen bytes.
func NewSecret() ([]byte, error) {
	b := make([]byte, SecretLen)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("bootstrap: secret: %w", err)
	}
	return b, nil
}

// Connect joins job as its environment describes and returns its
// bootstrap: nothing to connect for a single PE; a Client of oshrun's store;
// or, under srun and mpirun, a store served by PE 0 on the port of
// job.Addr that the others dial, listening only where they are (see
// addrStorePlace, and pmiStorePlace for a job that learned it through
// PMI). timeout bounds the
// wait for the store to answer, and PE 0's wait for every PE to join;
// job.JoinTimeout, when set (JobFromEnv always sets it), takes its place
// for a store PE 0 serves.
func Connect(job Job, timeout time.Duration) (core.Bootstrap, error) {
	b, err := connect(job, timeout)
	if job.pmix == nil {
		return b, err
	}
	if err != nil {
		return nil, errors.Join(err, job.pmix.Finalize())
	}
	c, isClient := b.(*Client)
	if !isClient {
		b.Close()
		return nil, errors.Join(fmt.Errorf("bootstrap: connect: a PMIx job of %d PEs without a store: %w", job.Size, core.ErrInvalid),
			job.pmix.Finalize())
	}
	c.pmix = job.pmix
	return c, nil
}

func connect(job Job, timeout time.Duration) (core.Bootstrap, error) {
	if job.Size == 1 && (job.Launcher == LauncherNone || job.Addr == "") {
		return NewLocal(1)[0], nil
	}
	switch job.Launcher {
	case LauncherNone:
		return nil, fmt.Errorf("bootstrap: connect: a job of %d PEs needs a launcher: %w", job.Size, core.ErrInvalid)
	case LauncherOshrun:
		return Dial(job.Addr, job.Rank, job.Size, job.Secret, timeout)
	case LauncherSlurm, LauncherOpenMPI, LauncherHydra, LauncherPMIx:
	default:
		return nil, fmt.Errorf("bootstrap: connect: unknown launcher %q: %w", job.Launcher, core.ErrInvalid)
	}
	if job.JoinTimeout > 0 {
		timeout = job.JoinTimeout
	}
	told := EnvBootstrap
	if job.Interface != "" {
		told = job.Interface
	}
	if job.Rank != 0 {
		job.logJoin("dialling the store", "pe", job.Rank, "addr", job.Addr, "from", told)
		c, err := dial(job.Addr, job.Rank, job.Size, job.Secret, timeout, 0)
		if err != nil {
			return nil, fmt.Errorf("bootstrap: PE %d gives up joining the store PE 0 serves at %s (told by %s): %w",
				job.Rank, job.Addr, told, err)
		}
		job.logJoin("joined the store", "pe", job.Rank, "addr", job.Addr)
		return c, nil
	}
	ln := job.ln
	if ln == nil {
		_, port, err := net.SplitHostPort(job.Addr)
		if err != nil {
			return nil, &core.EnvError{Var: EnvBootstrap, Value: job.Addr, Allowed: addrForms}
		}
		place, err := addrStorePlace(job.Iface, job.Addr)
		if err != nil {
			return nil, err
		}
		if ln, err = net.Listen("tcp", net.JoinHostPort(place.listen, port)); err != nil {
			return nil, fmt.Errorf("bootstrap: PE 0 cannot serve the store on port %s (from %s=%s; %s): %w",
				port, EnvBootstrap, job.Addr, place.why, err)
		}
		job.logJoin("store placed", "pe", 0, "listen", ln.Addr().String(), "why", place.why)
	}
	if job.Insecure && job.Secret == nil {
		// Once per job: only PE 0 serves the store.
		fmt.Fprintf(insecureWarning, "goshmem: WARNING: %s=1: the job's bootstrap store at %s is unauthenticated: anyone who reaches it while the job starts can join in a PE's place and read the job's set-up; set %s or %s instead\n",
			EnvInsecure, job.Addr, EnvSecret, EnvSecretFile)
	}
	srv := NewServer(ln, job.Size, job.Secret)
	srv.DeadAfter = job.DeadAfter
	serveDone := make(chan error, 1)
	go func() { serveDone <- srv.Serve() }()
	job.logJoin("serving the store", "pe", 0, "addr", job.Addr, "listen", ln.Addr().String(), "npes", job.Size)
	c, err := dial(ln.Addr().String(), 0, job.Size, job.Secret, timeout, 0)
	if err != nil {
		srv.Close()
		<-serveDone
		return nil, err
	}
	// Every PE's first collective waits for all: PE 0 waits here, bounded,
	// so that a PE that never comes is named instead of waited for.
	reason := fmt.Sprintf("never joined the store at %s (told by %s) within %v", job.Addr, told, timeout)
	if missing := srv.awaitJoined(timeout, reason); len(missing) > 0 {
		srv.flush(closeWait) // the members that joined hear who never came
		c.Close()
		srv.Close()
		<-serveDone
		return nil, fmt.Errorf("bootstrap: PE 0 gives up: %s %s: %w", pesList(missing), reason, core.ErrTimeout)
	}
	job.logJoin("every PE joined the store", "pe", 0, "addr", job.Addr, "npes", job.Size)
	c.server, c.serveDone, c.linger = srv, serveDone, timeout
	return c, nil
}

// pesList names ranks for a message: "PE 3", "PEs 1, 2, 5", the first
// sixteen of a long list and how many more.
func pesList(ranks []int) string {
	if len(ranks) == 1 {
		return fmt.Sprintf("PE %d", ranks[0])
	}
	var b strings.Builder
	b.WriteString("PEs ")
	for i, r := range ranks {
		if i == 16 {
			fmt.Fprintf(&b, " and %d more", len(ranks)-16)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(r))
	}
	return b.String()
}

// logJoin reports the bootstrap's progress at debug level; with
// SHMEM_DEBUG on in the job's environment it goes to standard error, so a
// job that hangs while assembling shows how far each PE got.
func (j *Job) logJoin(msg string, args ...any) {
	if j.debug {
		slog.New(slog.NewTextHandler(os.Stderr, nil)).Info("bootstrap: "+msg, args...)
	}
}
