package core

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The settings registry: every GOSHMEM_ and SHMEM_ variable any package of
// goshmem reads, each declared once, by the package that owns it, with
// Declare, and read through the job's environment with Param's typed
// readers. provinfo -e, SHMEM_INFO and the README's table of variables are
// made from Settings; a test fails when code reads one of these variables
// any other way.
//
// A provider's parameters are declared by the provider's Info (Params)
// and join the registry when the provider is registered.

// Kind is what a variable's value is, and so which parser reads it.
type Kind uint8

const (
	// KindText is a value its owner checks itself: a name, an address, a
	// path, a list, one of a few words.
	KindText Kind = iota
	// KindBool is read by ParseBool.
	KindBool
	// KindInt is a whole number in a range, read by ParseIntVar.
	KindInt
	// KindSize is a byte size ("512M"), read by ParseSizeVar.
	KindSize
	// KindDuration is a Go duration ("5s"), read by ParseDurationVar.
	KindDuration
	// KindChoice is one of a few words, Param.Choices, in any case, read
	// by Param.Choice.
	KindChoice
)

func (k Kind) String() string {
	switch k {
	case KindBool:
		return "bool"
	case KindInt:
		return "int"
	case KindSize:
		return "size"
	case KindDuration:
		return "duration"
	case KindChoice:
		return "choice"
	}
	return "text"
}

// Prefixes a declared variable's name starts with.
var settingPrefixes = []string{"GOSHMEM_", "SHMEM_"}

var (
	settingsMu sync.RWMutex
	declared   = map[string]Param{}
)

// Declare adds variables to the registry and returns them. Each is
// declared once, by the package that reads it, which becomes its Owner
// unless Owner is set; Env must start with GOSHMEM_ or SHMEM_ and Help
// must say what the variable does. A second declaration of a name, or an
// incomplete one, panics: both are mistakes in the program, not in its
// environment.
func Declare(ps ...Param) []Param {
	owner := callerPackage(2)
	settingsMu.Lock()
	defer settingsMu.Unlock()
	for i := range ps {
		p := &ps[i]
		if p.Owner == "" {
			p.Owner = owner
		}
		if !hasSettingPrefix(p.Env) || p.Help == "" {
			panic(fmt.Sprintf("core: Declare of %q by %s: a variable needs a name starting with GOSHMEM_ or SHMEM_ and a help line", p.Env, p.Owner))
		}
		if q, ok := declared[p.Env]; ok {
			panic(fmt.Sprintf("core: %s declared by %s and again by %s", p.Env, q.Owner, p.Owner))
		}
		declared[p.Env] = *p
	}
	return ps
}

func hasSettingPrefix(name string) bool {
	for _, pre := range settingPrefixes {
		if strings.HasPrefix(name, pre) && len(name) > len(pre) {
			return true
		}
	}
	return false
}

// callerPackage is the import path, within this module, of the package
// whose code called the function skip frames up.
func callerPackage(skip int) string {
	pc, _, _, ok := runtime.Caller(skip)
	if !ok {
		return "?"
	}
	name := runtime.FuncForPC(pc).Name() // github.com/goshmem/goshmem/bootstrap.init
	slash := strings.LastIndex(name, "/")
	if dot := strings.Index(name[slash+1:], "."); dot >= 0 {
		name = name[:slash+1+dot]
	}
	return strings.TrimPrefix(name, "github.com/goshmem/goshmem/")
}

// Settings returns every variable of the registry, sorted by name: those
// the linked packages declared and the parameters of every built-in
// provider (owned by providers/NAME), which Info.Origin says is one. A
// provider's parameter that a package declared already is listed once,
// as declared. Plugin providers' parameters, which their manifests name,
// are theirs, not the program's.
func Settings() []Param {
	settingsMu.RLock()
	out := make([]Param, 0, len(declared))
	seen := make(map[string]bool, len(declared))
	for _, p := range declared {
		out = append(out, p)
		seen[p.Env] = true
	}
	settingsMu.RUnlock()
	for _, prov := range Providers() {
		info := prov.Info()
		if info.Origin != BuiltIn {
			continue
		}
		for _, p := range info.Params {
			if seen[p.Env] {
				continue
			}
			seen[p.Env] = true
			if p.Owner == "" {
				p.Owner = "providers/" + prov.Name()
			}
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Env < out[j].Env })
	return out
}

// BuiltIn is the Info.Origin of a provider linked into the program.
const BuiltIn = "built-in"

// Setting returns the declared variable named name.
func Setting(name string) (Param, bool) {
	settingsMu.RLock()
	defer settingsMu.RUnlock()
	p, ok := declared[name]
	return p, ok
}

// Lookup returns p's value in env (nil: the process environment), without
// surrounding space; ok is false when the variable is unset or empty.
func (p Param) Lookup(env func(string) (string, bool)) (string, bool) {
	if env == nil {
		env = os.LookupEnv
	}
	v, ok := env(p.Env)
	v = strings.TrimSpace(v)
	return v, ok && v != ""
}

// Raw returns p's value in env (nil: the process environment) as it is
// set, and whether it is set at all, empty included.
func (p Param) Raw(env func(string) (string, bool)) (string, bool) {
	if env == nil {
		env = os.LookupEnv
	}
	return env(p.Env)
}

// Get returns p's value in env, or its default when unset or empty.
func (p Param) Get(env func(string) (string, bool)) string {
	if v, ok := p.Lookup(env); ok {
		return v
	}
	return p.Default
}

// Bool reads p as a boolean (ParseBool); unset or empty is its default.
func (p Param) Bool(env func(string) (string, bool)) (bool, error) {
	return ParseBool(p.Env, p.Get(env))
}

// Int reads p as a whole number in [lo, hi]; unset or empty is its
// default.
func (p Param) Int(env func(string) (string, bool), lo, hi int) (int, error) {
	return ParseIntVar(p.Env, p.Get(env), lo, hi)
}

// Size reads p as a byte size in [lo, hi]; unset or empty is its default.
func (p Param) Size(env func(string) (string, bool), lo, hi int64) (int64, error) {
	return ParseSizeVar(p.Env, p.Get(env), lo, hi)
}

// Duration reads p as a Go duration in [lo, hi]; unset or empty is its
// default.
func (p Param) Duration(env func(string) (string, bool), lo, hi time.Duration) (time.Duration, error) {
	return ParseDurationVar(p.Env, p.Get(env), lo, hi)
}

// Choice reads p as one of p.Choices, matched in any case and returned
// as the choice is spelled; unset or empty is its default. Anything else
// is an EnvError naming the variable and the choices.
func (p Param) Choice(env func(string) (string, bool)) (string, error) {
	v := p.Get(env)
	for _, c := range p.Choices {
		if strings.EqualFold(v, c) {
			return c, nil
		}
	}
	return "", &EnvError{Var: p.Env, Value: v, Allowed: ChoicesShown(p.Choices)}
}

// ChoicesShown lists choices as an error or a listing says them: "a",
// "b" or "c".
func ChoicesShown(choices []string) string {
	q := make([]string, len(choices))
	for i, c := range choices {
		q[i] = strconv.Quote(c)
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// BoolForms is what ParseBool accepts, for error messages and help.
const BoolForms = "1, y, yes, true or on; 0, n, no, false or off (in any case)"

// ParseBool parses the value of variable name as a boolean: 1, y, yes,
// true and on are true; 0, n, no, false and off are false, in any case.
// Anything else is an EnvError naming the variable and those forms.
func ParseBool(name, value string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(value)) {
	case "1", "y", "yes", "true", "on":
		return true, nil
	case "0", "n", "no", "false", "off":
		return false, nil
	}
	return false, &EnvError{Var: name, Value: value, Allowed: BoolForms}
}

// ParseIntVar parses the value of variable name as a whole number in
// [lo, hi] and returns an EnvError naming the variable and the range
// otherwise.
func ParseIntVar(name, value string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(value))
	if err != nil || n < lo || n > hi {
		return 0, &EnvError{Var: name, Value: value, Allowed: fmt.Sprintf("an integer from %d to %d", lo, hi)}
	}
	return n, nil
}

// The variables core reads, and those every layer shares.
var (
	// ProviderParam is GOSHMEM_PROVIDER, the provider spec of Select.
	ProviderParam = declare(Param{Env: EnvProvider, Default: "(automatic)",
		Help: "provider name, preference list (loopback,tcp) or exclusions (^tcp, ^loopback,^tcp); unset picks by locality"})
	// ProviderPathParam is GOSHMEM_PROVIDER_PATH, where plugins are found.
	ProviderPathParam = declare(Param{Env: EnvProviderPath,
		Help: "directories (separated by ':') searched for plugin providers, executables named goshmem-provider-NAME"})
	// ShmDirParam is GOSHMEM_SHM_DIR (ShmDir).
	ShmDirParam = declare(Param{Env: EnvShmDir, Default: "/dev/shm",
		Help: "an existing directory in which each job keeps its shared-memory files, in a directory of its own removed when the job ends (the temporary directory where /dev/shm is missing)"})
	// CPUsParam is GOSHMEM_CPUS (Config.CPUs).
	CPUsParam = declare(Param{Env: EnvCPUs, Kind: KindInt, Default: "(the CPUs the process may use)",
		Help: "how many CPUs the job's PEs on a host share; waiters spin only while every PE has one. oshrun sets it and binds each PE of a host to its share of the CPUs where they fit (--bind-to share, the default), the i-th PE to CPU i mod CPUs with --bind-to core, none with --bind-to none"})
	// HybridParam is GOSHMEM_HYBRID (Config.HybridSetting).
	HybridParam = declare(Param{Name: "HYBRID", Env: EnvHybrid, Kind: KindBool, Default: "1",
		Help: "in a job that spans hosts with several PEs on some host, on serves the pairs of PEs on one host through shared memory (loopback) and the others through the selected provider; off leaves every pair to the selected provider; every PE must say the same"})
	// EmulatedHostParam is GOSHMEM_EMULATED_HOST (EmulatedHost).
	EmulatedHostParam = declare(Param{Env: EnvEmulatedHost,
		Help: fmt.Sprintf("the emulated host this PE runs on within its machine (1 to %d letters, digits, '.', '-' or '_'): PEs of one machine naming different hosts are on different hosts for the job (no shared memory between them), as a ring of hosts emulated on one machine needs; it never joins PEs of different machines", maxEmulatedHost)})
	// DebugParam is SHMEM_DEBUG, which the bootstrap, shmem and the C
	// library read alike.
	DebugParam = declare(Param{Env: EnvDebug, Kind: KindBool, Default: "0",
		Help: "debug messages to standard error: each PE's bootstrap steps while the job assembles, the library's debug log, why a C routine returned an error"})
)

// EnvDebug is the specification's SHMEM_DEBUG.
const EnvDebug = "SHMEM_DEBUG"

func declare(p Param) Param { return Declare(p)[0] }
