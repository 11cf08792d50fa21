package core

import (
	"fmt"
	"math"
	"math/bits"
	"strings"
)

// Caps is a set of capability bits a provider advertises in its Info.
type Caps uint64

const (
	CapRMA          Caps = 1 << iota // blocking and non-blocking put and get
	CapAtomic                        // non-fetching atomics (add, set, and, or, xor)
	CapFetchAtomic                   // fetching atomics (fetch, fetch-add, swap, ...)
	CapCompareSwap                   // compare-and-swap
	CapAtomicFloat                   // fetch, set and swap on float32 and float64
	CapDirectAccess                  // load/store access to a peer's region (shmem_ptr)
	CapLocalAtomics                  // remote atomics are atomic with the target's own sync/atomic
	CapPutSignal                     // Endpoint.PutSignal carries the data and the signal as one operation
	CapPEQuiet                       // endpoints are PEQuieters: a quiet of some PEs waits for those PEs alone
	CapBatch                         // endpoints are Batchers: a batch of small operations leaves in fewer transfers
	CapBlocks                        // endpoints are BlockMovers: a blocked or strided move is one operation
	capEnd
)

var capNames = [...]string{"rma", "atomic", "fetch-atomic", "compare-swap", "atomic-float", "direct-access", "local-atomics", "put-signal", "pe-quiet", "batch", "blocks"}

// Has reports whether every capability in want is in c.
func (c Caps) Has(want Caps) bool { return c&want == want }

// Names returns the capability names in bit order.
func (c Caps) Names() []string {
	var out []string
	for c != 0 {
		i := bits.TrailingZeros64(uint64(c))
		c &^= 1 << i
		if i < len(capNames) {
			out = append(out, capNames[i])
		} else {
			out = append(out, fmt.Sprintf("bit%d", i))
		}
	}
	return out
}

func (c Caps) String() string {
	if c == 0 {
		return "none"
	}
	return strings.Join(c.Names(), ",")
}

// Locality says where the PEs a provider connects may live.
type Locality uint8

const (
	// OneHost providers connect PEs that share a host (shared memory).
	OneHost Locality = iota + 1
	// AnyHost providers connect PEs on any hosts.
	AnyHost
)

func (l Locality) String() string {
	switch l {
	case OneHost:
		return "one-host"
	case AnyHost:
		return "any-host"
	}
	return fmt.Sprintf("Locality(%d)", uint8(l))
}

// Progress says who moves data between calls.
type Progress uint8

const (
	// ProgressAuto providers complete operations without the caller's help
	// (hardware, shared memory, or a progress goroutine).
	ProgressAuto Progress = iota + 1
	// ProgressManual providers move data only inside their calls.
	ProgressManual
)

func (p Progress) String() string {
	switch p {
	case ProgressAuto:
		return "auto"
	case ProgressManual:
		return "manual"
	}
	return fmt.Sprintf("Progress(%d)", uint8(p))
}

// Order is a set of ordering guarantees between operations to one PE from
// one endpoint, in the spirit of libfabric's msg_order.
type Order uint8

const (
	// OrderPutPut: puts to one PE land in issue order without a fence.
	OrderPutPut Order = 1 << iota
	// OrderAtomicAtomic: atomics to one PE execute in issue order.
	OrderAtomicAtomic
)

func (o Order) String() string {
	var s []string
	if o&OrderPutPut != 0 {
		s = append(s, "put-after-put")
	}
	if o&OrderAtomicAtomic != 0 {
		s = append(s, "atomic-after-atomic")
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ",")
}

// Unbounded is the MaxMsgSize or InjectSize of a provider without that limit.
const Unbounded = math.MaxInt

// Param describes one setting, read from the environment: a provider's
// parameter (Info.Params) or a variable a package declared (Declare).
type Param struct {
	Name    string // short name of a provider's parameter, e.g. "DIR"
	Env     string // full variable, e.g. "GOSHMEM_LOOPBACK_DIR"
	Kind    Kind   // what the value is, and so which parser reads it
	Default string // what an unset variable means
	Help    string // one line
	// Owner is the package that reads the variable, e.g. "bootstrap" or
	// "providers/tcp"; Declare and Settings fill it in.
	Owner string
	// Secret marks a variable whose value must never be printed: a
	// listing says whether it is set, never what it holds.
	Secret bool
	// Choices are the values of a KindChoice variable.
	Choices []string
}

// Shown is how a listing prints the variable's value v (ok: it is set):
// a secret as set or unset with its length, anything else as it is, and
// an unset variable as its default.
func (p Param) Shown(v string, ok bool) string {
	switch {
	case !ok:
		return p.Default + " (default)"
	case p.Secret:
		return SecretShown(v)
	}
	return v
}

// SecretShown describes a secret's value without revealing any of it: that
// it is set, and its length, which is what explains a length error.
func SecretShown(v string) string {
	return fmt.Sprintf("(set, %d characters, not shown)", len(v))
}

// Info describes a provider. It is the single source for provinfo, for the
// conformance suite's skips and for shmem's start-up checks.
type Info struct {
	Name        string
	Description string
	Version     string
	Caps        Caps
	// Atomics lists, per type, the operations the provider executes.
	Atomics    AtomicSupport
	Locality   Locality
	Progress   Progress
	Order      Order
	ThreadSafe bool // endpoints may be used by many goroutines at once
	// MaxMsgSize is the largest single put or get, or Unbounded.
	MaxMsgSize int
	// InjectSize is the largest put that returns with the source buffer
	// already copied, before the data has left this PE, or Unbounded when
	// every put does. It is a threshold, not a buffer size to allocate.
	InjectSize int
	// MaxRegionSize is the largest region NewRegion makes, or 0 when only
	// memory limits it. shmem checks the symmetric heap against it before
	// asking, so a heap too large is refused in SHMEM_SYMMETRIC_SIZE's
	// terms rather than in the provider's.
	MaxRegionSize int
	// Preference ranks providers for automatic selection when
	// GOSHMEM_PROVIDER is unset: among providers whose locality fits the
	// job, the highest wins. Zero means the provider is used only by name.
	Preference int
	Params     []Param
	// Origin tells where the provider comes from: "built-in", or the path
	// of a plugin executable.
	Origin string
}

// Param returns the parameter with the given short name.
func (i *Info) Param(name string) (Param, bool) {
	for _, p := range i.Params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

// ParamEnv returns the environment variable that carries a provider's
// parameter: GOSHMEM_<PROVIDER>_<NAME>.
func ParamEnv(provider, name string) string {
	up := strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(provider))
	return "GOSHMEM_" + up + "_" + strings.ToUpper(name)
}

// NewParam fills a Param's Env from the provider and parameter names. Its
// Kind is KindText; WithKind names another.
func NewParam(provider, name, def, help string) Param {
	return Param{Name: name, Env: ParamEnv(provider, name), Default: def, Help: help}
}

// WithKind is p read by kind k's parser (Param.Bool, Int, Size or
// Duration), as provinfo -e, SHMEM_INFO and the README's table then say.
func (p Param) WithKind(k Kind) Param {
	p.Kind = k
	return p
}

// WithChoices is p as one of choices (KindChoice), which Param.Choice
// reads in any case.
func (p Param) WithChoices(choices ...string) Param {
	p.Kind, p.Choices = KindChoice, choices
	return p
}
