package emu

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/goshmem/goshmem/core"
)

// FaultKind is what a Fault does.
type FaultKind int

const (
	// FaultLinkDown forces a link down, as a cable pull or a surprise
	// reset would: both sides see the link go down.
	FaultLinkDown FaultKind = iota + 1
	// FaultLinkUp lifts a forced link down.
	FaultLinkUp
	// FaultKill kills a host: in a ring opened with Open its process dies
	// at once (SIGKILL); in a ring of goroutines (NewRing) its ports stop
	// as if its process had died.
	FaultKill
)

func (k FaultKind) String() string {
	switch k {
	case FaultLinkDown:
		return "down"
	case FaultLinkUp:
		return "up"
	case FaultKill:
		return "kill"
	}
	return fmt.Sprintf("FaultKind(%d)", int(k))
}

// Fault is one injected fault: Kind on link or host Target, After the
// moment the host that injects it opened its ports. Link k's faults are
// injected by host k, a host's kill by the host itself.
type Fault struct {
	Kind   FaultKind
	Target int // link index for link faults, host index for kills
	After  time.Duration
}

func (f Fault) String() string {
	what := "link"
	if f.Kind == FaultKill {
		what = "host"
	}
	return fmt.Sprintf("%s=%d:%s@%s", what, f.Target, f.Kind, f.After)
}

// injector is the host that injects f.
func (f Fault) injector() int { return f.Target }

// check validates f for a ring of n hosts.
func (f Fault) check(n int) error {
	if f.Kind < FaultLinkDown || f.Kind > FaultKill {
		return &FaultError{Spec: f.String(), Problem: "unknown kind"}
	}
	if f.Target < 0 || f.Target >= n {
		what := "link"
		if f.Kind == FaultKill {
			what = "host"
		}
		return &FaultError{Spec: f.String(),
			Problem: fmt.Sprintf("%s %d is not in a ring of %d hosts (%ss 0 to %d)", what, f.Target, n, what, n-1)}
	}
	if f.After < 0 {
		return &FaultError{Spec: f.String(), Problem: "negative time"}
	}
	return nil
}

// FaultGrammar describes what ParseFaults accepts.
const FaultGrammar = `faults separated by ";": "link=K:down@T", "link=K:up@T" or "host=H:kill@T", ` +
	`where K is a link (link K joins host K's right port to host K+1's left port), H a host, ` +
	`and T a duration ("100ms", "2s", "0s") after the injecting host opened its ports`

// FaultError reports a fault that cannot be injected.
type FaultError struct {
	Spec    string
	Problem string
}

func (e *FaultError) Error() string {
	return fmt.Sprintf("ntb emu: fault %q: %s; allowed %s", e.Spec, e.Problem, FaultGrammar)
}

func (e *FaultError) Unwrap() error { return core.ErrInvalid }

// ParseFaults parses a fault list (FaultGrammar) for a ring of n hosts.
// The empty string is no fault.
func ParseFaults(spec string, n int) ([]Fault, error) {
	var out []Fault
	for item := range strings.SplitSeq(spec, ";") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		f, err := parseFault(item)
		if err != nil {
			return nil, err
		}
		if err := f.check(n); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

func parseFault(item string) (Fault, error) {
	bad := func(problem string) (Fault, error) { return Fault{}, &FaultError{Spec: item, Problem: problem} }
	target, rest, ok := strings.Cut(item, ":")
	if !ok {
		return bad(`no ":" after the target`)
	}
	action, at, ok := strings.Cut(rest, "@")
	if !ok {
		return bad(`no "@" before the time`)
	}
	what, idx, ok := strings.Cut(strings.TrimSpace(target), "=")
	if !ok {
		return bad(`the target is not "link=K" or "host=H"`)
	}
	var f Fault
	var err error
	if f.Target, err = strconv.Atoi(strings.TrimSpace(idx)); err != nil {
		return bad(fmt.Sprintf("%q is not an index", idx))
	}
	if f.After, err = time.ParseDuration(strings.TrimSpace(at)); err != nil || f.After < 0 {
		return bad(fmt.Sprintf("%q is not a duration of zero or more", at))
	}
	switch w, a := strings.TrimSpace(what), strings.TrimSpace(action); {
	case w == "link" && a == "down":
		f.Kind = FaultLinkDown
	case w == "link" && a == "up":
		f.Kind = FaultLinkUp
	case w == "host" && a == "kill":
		f.Kind = FaultKill
	default:
		return bad(fmt.Sprintf("%q on a %q target", a, w))
	}
	return f, nil
}
