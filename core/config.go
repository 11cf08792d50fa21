package core

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Config is what a provider's Open receives.
type Config struct {
	// Bootstrap is the out-of-band channel of the job: rank, size,
	// allgather and barrier. Providers use it while opening and closing.
	Bootstrap Bootstrap
	// JobID names the job; it is the same on every PE and unique among
	// jobs running at once on a host.
	JobID string
	// Secret is the job's shared secret (may be empty when the launcher
	// provided none); providers that listen on a network prove it.
	Secret []byte
	// Env looks up environment variables; nil means the process environment.
	// Tests set it to run PEs with different settings in one process.
	Env func(key string) (string, bool)
	// Log receives the provider's debug and warning messages; nil discards.
	Log *slog.Logger
	// HostID overrides the host identity used to decide whether the job
	// fits on one host; empty means HostID(Env). Tests use it to pose as
	// several hosts.
	HostID string
	// Waiting is the job's spin-then-sleep policy on this host, which
	// shmem derives once (NewWaiting) before it opens the provider; nil
	// means the provider derives it itself (see Config.Wait).
	Waiting *Waiting
	// LockedCallers says that the program calls in on goroutines locked to
	// their OS threads, as a C program's calls through cgo are: parking
	// such a goroutine (in a channel receive, in the runtime's network
	// poller) hands its runtime processor to another thread and back. A
	// provider may then wait on the caller's thread instead, in a system
	// call (poll(2) on a socket), where it would otherwise park.
	LockedCallers bool
}

// Waiting is how a PE waits for memory another PE writes: it re-reads the
// memory Polls times, then gives up the CPU, yielding a little and then
// sleeping. It is derived once per job and host from the PEs on the host
// and the CPUs they share (NewWaiting), and handed down in Config, so
// that shmem's waits and the provider's follow one policy and no layer
// spins after another has: whoever tests the condition spins, and a
// provider's LocalWaiter.WaitChange, called once those polls are spent,
// yields and sleeps without spinning again.
type Waiting struct {
	// Polls is how often a waiter re-reads memory before it gives up the
	// CPU.
	Polls int
	// Solo says the host's PEs do not outnumber its CPUs: the PE waited
	// for is running, not waiting for a CPU, so its store is likely
	// microseconds away and worth spinning for.
	Solo bool
}

const (
	// SoloPolls is Waiting.Polls where every PE has a CPU: a few
	// microseconds, longer than a store takes to cross between cores,
	// far shorter than a kernel sleep and wake-up.
	SoloPolls = 20000
	// SharedPolls is Waiting.Polls where the PEs outnumber the CPUs: a
	// store already on its way is caught, and then the spinner gives its
	// CPU to the PE it waits for instead of holding it.
	SharedPolls = 200
)

// NewWaiting derives the waiting policy for pes PEs on a host whose CPUs
// they share cpus of.
func NewWaiting(pes, cpus int) Waiting {
	if pes <= cpus {
		return Waiting{Polls: SoloPolls, Solo: true}
	}
	return Waiting{Polls: SharedPolls}
}

// Wait returns the job's waiting policy: Waiting if set, else one derived
// from CPUs and the job's size, as if every PE were on this host (more
// PEs than are only ever make waiters spin less).
func (c *Config) Wait() (Waiting, error) {
	if c.Waiting != nil {
		return *c.Waiting, nil
	}
	cpus, err := c.CPUs()
	if err != nil {
		return Waiting{}, err
	}
	pes := 1
	if c.Bootstrap != nil {
		pes = c.Bootstrap.Size()
	}
	return NewWaiting(pes, cpus), nil
}

// Lookup returns an environment variable as the job sees it.
func (c *Config) Lookup(key string) (string, bool) {
	if c.Env != nil {
		return c.Env(key)
	}
	return os.LookupEnv(key)
}

// Value returns p's value: the variable if set and non-empty, else its default.
func (c *Config) Value(p Param) string { return p.Get(c.Lookup) }

// Int reads p as an integer in [lo, hi].
func (c *Config) Int(p Param, lo, hi int) (int, error) { return p.Int(c.Lookup, lo, hi) }

// Choice returns p's value as one of its choices (Param.Choice).
func (c *Config) Choice(p Param) (string, error) { return p.Choice(c.Lookup) }

// MinDuration and MaxDuration bound Config.Duration: a timeout below a
// millisecond expires before any peer can answer, one above a day is a
// hang by another name.
const (
	MinDuration = time.Millisecond
	MaxDuration = 24 * time.Hour
)

// Duration reads p as a Go duration ("5s", "250ms") from MinDuration to
// MaxDuration.
func (c *Config) Duration(p Param) (time.Duration, error) {
	return c.DurationIn(p, MinDuration, MaxDuration)
}

// DurationIn reads p as a Go duration in [lo, hi].
func (c *Config) DurationIn(p Param, lo, hi time.Duration) (time.Duration, error) {
	return p.Duration(c.Lookup, lo, hi)
}

// ParseDurationVar parses the value of variable name as a Go duration in
// [lo, hi] and returns an EnvError naming the variable, the value and the
// range otherwise. With lo 0, "0" is accepted and means off or none, as
// the variable's help says. Every duration a provider or the bootstrap
// reads from the environment goes through here, so none is unbounded.
func ParseDurationVar(name, value string, lo, hi time.Duration) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(value))
	if err != nil || d < lo || d > hi {
		allowed := fmt.Sprintf(`a duration from %v to %v, such as "5s" or "250ms"`, lo, hi)
		if lo == 0 {
			allowed = fmt.Sprintf(`0 or a duration up to %v, such as "5s" or "250ms"`, hi)
		}
		return 0, &EnvError{Var: name, Value: value, Allowed: allowed}
	}
	return d, nil
}

// SizeForms describes what ParseSize accepts, for error messages.
const SizeForms = `a byte count ("1048576") or a number with a suffix K, M, G or T, optionally followed by B or iB ("512M", "2G", "64KiB"); suffixes are powers of 1024`

// ParseSize parses a byte size: a plain count, or a number with a binary
// suffix K, M, G, T (each optionally followed by "B" or "iB"), as
// SHMEM_SYMMETRIC_SIZE is written. Fractions are allowed with a suffix
// ("1.5G").
func ParseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(t)
	}
	num, unit := t[:i], strings.TrimSpace(t[i:])
	mult, ok := sizeUnits[unit]
	if num == "" || !ok {
		return 0, fmt.Errorf("bad size %q", s)
	}
	if mult == 1 {
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bad size %q", s)
		}
		return n, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f*float64(mult) >= math.MaxInt64/2 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return int64(f * float64(mult)), nil
}

var sizeUnits = map[string]int64{
	"": 1, "B": 1,
	"K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10,
	"M": 1 << 20, "MB": 1 << 20, "MIB": 1 << 20,
	"G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30,
	"T": 1 << 40, "TB": 1 << 40, "TIB": 1 << 40,
}

// ParseSizeVar parses the value of variable name as a size in [lo, hi] and
// returns an EnvError naming the variable and the accepted forms otherwise.
func ParseSizeVar(name, value string, lo, hi int64) (int64, error) {
	n, err := ParseSize(value)
	if err != nil {
		return 0, &EnvError{Var: name, Value: value, Allowed: SizeForms}
	}
	if n < lo || n > hi {
		return 0, &EnvError{Var: name, Value: value,
			Allowed: fmt.Sprintf("a size from %s to %s", FormatSize(lo), FormatSize(hi))}
	}
	return n, nil
}

// FormatSize prints a byte count with the largest exact binary suffix.
func FormatSize(n int64) string {
	for _, u := range []struct {
		s string
		m int64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n >= u.m && n%u.m == 0 {
			return strconv.FormatInt(n/u.m, 10) + u.s
		}
	}
	return strconv.FormatInt(n, 10)
}

// Variables that every provider and the launcher agree on.
const (
	EnvProvider     = "GOSHMEM_PROVIDER"
	EnvProviderPath = "GOSHMEM_PROVIDER_PATH"
	EnvShmDir       = "GOSHMEM_SHM_DIR"
	// EnvCPUs is how many CPUs the job's PEs on this host share; the
	// launcher sets it (see Config.CPUs).
	EnvCPUs = "GOSHMEM_CPUS"
)

// maxCPUs bounds GOSHMEM_CPUS.
const maxCPUs = 1 << 20

// CPUs is how many CPUs the job's PEs on this host share: GOSHMEM_CPUS,
// which the launcher sets, else the CPUs this process may run on. The two
// differ for a PE the launcher bound to one CPU: the process may run on
// that one only, yet the job's PEs have all the launcher's. Providers
// compare it with the PEs on the host to choose whether waiters spin,
// which pays only while every PE has a CPU of its own.
func (c *Config) CPUs() (int, error) {
	v, ok := CPUsParam.Lookup(c.Lookup)
	if !ok {
		return runtime.NumCPU(), nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxCPUs {
		return 0, &EnvError{Var: EnvCPUs, Value: v,
			Allowed: fmt.Sprintf("an integer from 1 to %d: the CPUs the job's PEs on this host share", maxCPUs)}
	}
	return n, nil
}

// ShmDir is the directory in which providers keep a job's shared-memory
// files: GOSHMEM_SHM_DIR if set, else /dev/shm where it exists, else the
// temporary directory.
func ShmDir(lookup func(string) (string, bool)) string {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if d, ok := ShmDirParam.Lookup(lookup); ok {
		return d
	}
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		return "/dev/shm"
	}
	return os.TempDir()
}

// JobDir is the directory holding one job's shared-memory files. Providers
// create it (0700) with MakeJobDir when they need it and leave it with
// LeaveJobDir, the last one removing it; the launcher removes it when the
// job ends, whatever happened to the PEs, and SweepJobDirs removes it
// once every process of the job is gone (see jobdir.go).
func JobDir(lookup func(string) (string, bool), jobID string) string {
	return filepath.Join(ShmDir(lookup), "goshmem-"+jobID)
}

// JobDir is JobDir for this configuration.
func (c *Config) JobDir() string { return JobDir(c.Lookup, c.JobID) }

// MakeJobDir creates the job's directory (0700) if it does not exist yet,
// records this process as one of its owners (LeaveJobDir undoes that) and
// returns it. The first call of a process sweeps dead jobs' directories
// (SweepJobDirs). Only that last directory is the job's to create: the
// directory above it (GOSHMEM_SHM_DIR, or its default) must exist, since
// a mistyped path would otherwise be created, by whoever runs the job,
// and never removed. A missing or unfit GOSHMEM_SHM_DIR is an EnvError
// naming it.
func MakeJobDir(lookup func(string) (string, bool), jobID string) (string, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	parent := ShmDir(lookup)
	if st, err := os.Stat(parent); err != nil || !st.IsDir() {
		why := "not a directory"
		if err != nil {
			why = err.Error()
		}
		if v, ok := ShmDirParam.Lookup(lookup); ok {
			return "", &EnvError{Var: EnvShmDir, Value: v,
				Allowed: "an existing directory, in which each job makes a directory of its own (" + why + ")"}
		}
		return "", fmt.Errorf("directory for shared-memory files %s: %s (set %s): %w", parent, why, EnvShmDir, ErrInvalid)
	}
	sweepOnce(lookup)
	dir := filepath.Join(parent, jobDirPrefix+jobID)
	ownedMu.Lock()
	defer ownedMu.Unlock()
	var err error
	// A process of the job that leaves removes the directory if it is the
	// last owner: one that joins at that moment makes it again.
	for range 3 {
		err = os.Mkdir(dir, 0o700)
		if errors.Is(err, fs.ErrExist) {
			// Another PE of the job made it; anything but a directory there
			// (a link placed by someone else) is refused.
			st, serr := os.Lstat(dir)
			switch {
			case serr != nil:
				err = serr
			case st.IsDir():
				err = nil
			default:
				err = fmt.Errorf("%s exists and is not a directory", dir)
			}
		}
		if err == nil {
			err = own(dir)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	if err != nil {
		return "", fmt.Errorf("job directory: %w", err)
	}
	return dir, nil
}

// MakeJobDir is MakeJobDir for this configuration.
func (c *Config) MakeJobDir() (string, error) { return MakeJobDir(c.Lookup, c.JobID) }
