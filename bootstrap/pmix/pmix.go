// Package pmix is a client of PMIx, the process-management interface of
// Open MPI's mpirun (and PRRTE) and of Slurm's srun --mpi=pmix. PMIx
// defines an API, not a wire protocol (each OpenPMIx release speaks its
// own), so the client calls OpenPMIx's libpmix, which every PMIx launcher
// ships: loaded at run time with dlopen, never linked, so building a
// program needs neither the library nor its headers, and a program runs
// without it under every other launcher.
//
// The bootstrap uses it as it uses package pmi: the job's size and this
// process's rank, which PEs share a node, and the launcher's key-value
// space (seen only by the job's processes) to publish the address and
// secret of the store PE 0 serves; PMIx_Abort ends the whole job, and
// PMIx_Finalize is the process's clean exit.
//
// # Lifetimes
//
// Open loads the library once per process and initializes PMIx; the
// Client is then the process's until Finalize or Abort. A Client is safe
// for use by one goroutine at a time, except Abort, which may be called
// at any time. Fence waits on a thread the library does not own and
// gives up after the Client's timeout; the library's late answer, should
// one come, frees what the wait had left.
package pmix

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goshmem/goshmem/core"
)

// The variables a PMIx launcher sets for its processes, and the one of
// goshmem that names the library.
const (
	EnvNamespace = "PMIX_NAMESPACE" // the job's namespace
	EnvRank      = "PMIX_RANK"      // this process's rank in it
	EnvVersion   = "PMIX_VERSION"   // the launcher's PMIx version
	// EnvLibrary names the PMIx library to load, a file name dlopen
	// finds or a path; DefaultLibrary when unset.
	EnvLibrary = "GOSHMEM_PMIX_LIB"
)

// DefaultLibrary is the library loaded when GOSHMEM_PMIX_LIB is unset: the
// shared object of OpenPMIx's ABI 2, which Debian's libpmix2 installs.
const DefaultLibrary = "libpmix.so.2"

// Package names the Debian packages that provide DefaultLibrary.
const Package = "libpmix2 (or libpmix-dev)"

// Keys of the PMIx standard the client reads.
const (
	keyJobSize    = "pmix.job.size"
	keyLocalPeers = "pmix.lpeers"
	keyNumNodes   = "pmix.num.nodes"
)

// maxPeersLen bounds a PMIX_LOCAL_PEERS value the client parses: a node's
// ranks, written out, for a job of at most maxRanks.
const (
	maxRanks    = 1 << 20
	maxPeersLen = 8 << 20
)

// Present reports whether a PMIx launcher started this process: it sets
// PMIX_NAMESPACE and PMIX_RANK, which the library reads to find its
// server.
func Present(lookup func(string) (string, bool)) bool {
	for _, k := range []string{EnvNamespace, EnvRank} {
		if v, ok := lookup(k); !ok || strings.TrimSpace(v) == "" {
			return false
		}
	}
	return true
}

// libraryParam is GOSHMEM_PMIX_LIB, in the registry (core.Declare).
var libraryParam = core.Declare(core.Param{Env: EnvLibrary, Default: DefaultLibrary,
	Help: "under a PMIx launcher (mpirun, srun --mpi=pmix): the PMIx library loaded at run time, a file name the dynamic loader finds or a path (Debian's " + Package + " installs the default)"})[0]

// Library is the library Open loads: GOSHMEM_PMIX_LIB, else DefaultLibrary.
func Library(lookup func(string) (string, bool)) string { return libraryParam.Get(lookup) }

// LibError is a PMIx library that cannot be loaded.
type LibError struct {
	Name   string // what dlopen was asked for
	Reason string // dlopen's answer
	NoCgo  bool   // the program cannot load libraries at all
}

func (e *LibError) Error() string {
	if e.NoCgo {
		return "pmix: " + e.Reason
	}
	return fmt.Sprintf("pmix: cannot load the PMIx library %s (%s): install Debian's package %s, or set %s to the path of libpmix.so",
		e.Name, e.Reason, Package, EnvLibrary)
}

func (e *LibError) Unwrap() error { return core.ErrNotSupported }

// StatusError is a PMIx call that did not succeed.
type StatusError struct {
	Code int    // the pmix_status_t
	Text string // PMIx_Error_string's name for it
}

func (e *StatusError) Error() string { return fmt.Sprintf("%s (PMIx status %d)", e.Text, e.Code) }

// The PMIx status codes the client tells apart.
const (
	statusTimeout  = -24
	statusNotFound = -46
)

func (e *StatusError) Unwrap() error {
	switch e.Code {
	case statusTimeout:
		return core.ErrTimeout
	case statusNotFound:
		return core.ErrInvalid
	}
	return nil
}

// Available loads the library lookup names (GOSHMEM_PMIX_LIB) and returns
// its version, or why it cannot be loaded. It does not initialize PMIx.
func Available(lookup func(string) (string, bool)) (version string, err error) {
	if err := load(Library(lookup)); err != nil {
		return "", err
	}
	return shortVersion(libVersion()), nil
}

// Client is this process's PMIx connection.
type Client struct {
	nspace  string
	rank    int
	size    int
	timeout time.Duration

	mu   sync.Mutex // guards done
	done bool       // finalized or aborted
}

// Open loads the library and initializes PMIx, learning this process's
// rank and the job's size. timeout bounds every wait for the launcher,
// the fence included.
func Open(lookup func(string) (string, bool), timeout time.Duration) (*Client, error) {
	if err := load(Library(lookup)); err != nil {
		return nil, err
	}
	nspace, rank, err := libInit()
	if err != nil {
		return nil, fmt.Errorf("pmix: PMIx_Init with the launcher's server for %s=%s failed (are the PMIX_ variables inherited from a job that ended?): %w",
			EnvNamespace, envValue(lookup, EnvNamespace), err)
	}
	c := &Client{nspace: nspace, rank: int(rank), timeout: timeout}
	size, err := libGetUint(rankWildcard, keyJobSize, c.seconds())
	if err == nil && (size < 1 || size > maxRanks || uint64(rank) >= size) {
		err = fmt.Errorf("the launcher says rank %d of %d: want a rank below a size from 1 to %d: %w", rank, size, maxRanks, core.ErrInvalid)
	}
	if err != nil {
		libFinalize()
		return nil, fmt.Errorf("pmix: the job's size (%s): %w", keyJobSize, err)
	}
	c.size = int(size)
	return c, nil
}

func envValue(lookup func(string) (string, bool), k string) string {
	v, _ := lookup(k)
	return v
}

// seconds is the timeout in whole seconds, as PMIx takes it, at least 1.
func (c *Client) seconds() int {
	return int(max(1, math.Ceil(c.timeout.Seconds())))
}

// Rank is this process's rank in the job.
func (c *Client) Rank() int { return c.rank }

// Size is the number of processes in the job.
func (c *Client) Size() int { return c.size }

// Namespace is the job's PMIx namespace.
func (c *Client) Namespace() string { return c.nspace }

// Version is the loaded library's version: "OpenPMIx 4.2.2".
func (c *Client) Version() string { return shortVersion(libVersion()) }

// shortVersion keeps a version string's name and number, dropping the
// ABI levels OpenPMIx appends in parentheses.
func shortVersion(v string) string {
	v, _, _ = strings.Cut(v, " (")
	return strings.TrimSpace(v)
}

// LocalPeers returns the ranks of the job that run on this process's node,
// in increasing order (PMIX_LOCAL_PEERS).
func (c *Client) LocalPeers() ([]int, error) {
	s, err := libGetString(rankWildcard, keyLocalPeers, c.seconds())
	if err != nil {
		return nil, fmt.Errorf("pmix: the ranks on this node (%s): %w", keyLocalPeers, err)
	}
	return ParseRanks(s, c.size)
}

// NumNodes returns how many nodes run the job's processes
// (PMIX_NUM_NODES).
func (c *Client) NumNodes() (int, error) {
	n, err := libGetUint(rankWildcard, keyNumNodes, c.seconds())
	if err != nil {
		return 0, fmt.Errorf("pmix: the job's nodes (%s): %w", keyNumNodes, err)
	}
	if n < 1 || n > maxRanks {
		return 0, fmt.Errorf("pmix: %s is %d: want 1 to %d: %w", keyNumNodes, n, maxRanks, core.ErrInvalid)
	}
	return int(n), nil
}

// Put publishes key=value for every process of the job; they see it
// after Commit and the next Fence.
func (c *Client) Put(key, value string) error {
	if err := libPut(key, value); err != nil {
		return fmt.Errorf("pmix: put %s: %w", key, err)
	}
	return nil
}

// Commit sends what Put published to the launcher's server.
func (c *Client) Commit() error {
	if err := libCommit(); err != nil {
		return fmt.Errorf("pmix: commit: %w", err)
	}
	return nil
}

// Fence waits until every process of the job has reached it, collecting
// what each committed. It gives up after the timeout: a process that died
// or never started never comes.
func (c *Client) Fence() error {
	if err := libFence(c.seconds()); err != nil {
		if errors.Is(err, core.ErrTimeout) {
			return fmt.Errorf("pmix: fence: not every process of the job (namespace %s) reached it within %v (did one die or never start?): %w",
				c.nspace, c.timeout, err)
		}
		return fmt.Errorf("pmix: fence: %w", err)
	}
	return nil
}

// Get returns the value rank published under key before the last Fence.
func (c *Client) Get(rank int, key string) (string, error) {
	if rank < 0 || rank >= c.size {
		return "", &core.PEError{PE: rank, NPEs: c.size}
	}
	v, err := libGetString(uint32(rank), key, c.seconds())
	if err != nil {
		return "", fmt.Errorf("pmix: rank %d's %s: %w", rank, key, err)
	}
	return v, nil
}

// Abort asks the launcher to end every process of the job, with status
// for the launcher to exit with and msg for it to print. The launcher
// usually ends this process too before Abort returns.
func (c *Client) Abort(status int, msg string) error {
	c.mu.Lock()
	if c.done {
		c.mu.Unlock()
		return fmt.Errorf("pmix: abort after finalize: %w", core.ErrClosed)
	}
	c.done = true
	c.mu.Unlock()
	return libAbort(status, msg)
}

// Finalize ends this process's PMIx connection: the launcher then counts its
// exit as a clean one. It is idempotent.
func (c *Client) Finalize() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return nil
	}
	c.done = true
	if err := libFinalize(); err != nil {
		return fmt.Errorf("pmix: finalize: %w", err)
	}
	return nil
}

// ParseRanks decodes a list of ranks as PMIx writes it (PMIX_LOCAL_PEERS):
// decimal ranks and ranges "a-b" separated by commas, each below size,
// none twice. The ranks come back in increasing order.
func ParseRanks(s string, size int) ([]int, error) {
	const forms = "comma-separated ranks or ranges (such as 0,1,2 or 0-3,8), each below the job's size, none twice"
	bad := func(why string) error {
		return fmt.Errorf("pmix: list of ranks %q %s: want %s: %w", clip(s), why, forms, core.ErrInvalid)
	}
	if len(s) > maxPeersLen {
		return nil, bad(fmt.Sprintf("is %d bytes long, above %d", len(s), maxPeersLen))
	}
	if size < 1 || size > maxRanks {
		return nil, fmt.Errorf("pmix: job size %d: want 1 to %d: %w", size, maxRanks, core.ErrInvalid)
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, bad("is empty")
	}
	seen := make([]bool, size)
	n := 0
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		lo, hi, isRange := strings.Cut(f, "-")
		a, err := parseRank(lo, size)
		if err != nil {
			return nil, bad(fmt.Sprintf("has %q, %v", f, err))
		}
		b := a
		if isRange {
			if b, err = parseRank(hi, size); err != nil {
				return nil, bad(fmt.Sprintf("has %q, %v", f, err))
			}
			if b < a {
				return nil, bad(fmt.Sprintf("has the range %q, which ends before it starts", f))
			}
		}
		for r := a; r <= b; r++ {
			if seen[r] {
				return nil, bad(fmt.Sprintf("names rank %d twice", r))
			}
			seen[r] = true
			n++
		}
	}
	out := make([]int, 0, n)
	for r, ok := range seen {
		if ok {
			out = append(out, r)
		}
	}
	return out, nil
}

func parseRank(s string, size int) (int, error) {
	if s == "" || len(s) > 8 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, errors.New("not a decimal rank")
	}
	r, err := strconv.Atoi(s)
	if err != nil || r >= size {
		return 0, fmt.Errorf("not a rank below %d", size)
	}
	return r, nil
}

// clip shortens a value from the launcher for an error message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
