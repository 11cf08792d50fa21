package core

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// Bootstrap is the job's out-of-band channel, used while providers open and
// close and by shmem before a domain exists. Collectives are called by every
// member in the same order. Implementations live in bootstrap: in one
// process for tests, over a TCP store for launched jobs.
type Bootstrap interface {
	Rank() int
	Size() int
	// Allgather contributes data and returns every member's contribution,
	// indexed by rank.
	Allgather(data []byte) ([][]byte, error)
	// Barrier returns once every member has entered it.
	Barrier() error
	// Err is nil while every member that joined is alive or finalized; once
	// a member is lost it returns a *PeerLostError. It is cheap enough to
	// poll from wait loops.
	Err() error
	// Close leaves the job cleanly: the others see this member as finalized,
	// not lost.
	Close() error
}

// LossReporter is implemented by bootstraps that can be told of a lost
// member by the layer that noticed it. A transport can know what the
// store cannot: a stopped process, or a host that still answers on the
// store's network but no longer on the job's links, keeps its store
// connection, so until told, every collective waits for that member for
// ever, the barrier a closing domain runs included.
type LossReporter interface {
	// ReportLost records the loss of e.PE, unless a loss is already
	// recorded: Err returns it and every running and later collective
	// ends with it at once. It also tells the other members, and whoever
	// watches the job, so that they stop waiting too. It never blocks.
	ReportLost(e *PeerLostError)
}

// JobAborter is implemented by bootstraps whose launcher can be asked to
// end the whole job (PMIx_Abort), as a global exit or a fatal error must.
type JobAborter interface {
	// AbortJob asks the launcher to end every PE of the job, exiting
	// with status and reporting reason (empty for a global exit). It
	// returns whether the launcher was asked, boundedly.
	AbortJob(status int, reason string) bool
}

// ReportLost tells b that the PE err names is lost, if err wraps a
// *PeerLostError naming a member and b can be told (see LossReporter).
// Providers call it when they fail on a peer they found lost themselves.
func ReportLost(b Bootstrap, err error) {
	var pl *PeerLostError
	if b == nil || !errors.As(err, &pl) || pl.PE < 0 || pl.PE >= b.Size() {
		return
	}
	if r, ok := b.(LossReporter); ok {
		r.ReportLost(pl)
	}
}

// Agree makes a local error collective: every member contributes its error
// (or none) and every member gets the same result, nil only if all
// succeeded. Providers call it after each fallible step of Open, so a
// failure on one PE never leaves the others waiting.
//
// The other PEs' errors arrive as *RemoteError values that unwrap to the
// same sentinel as the original, so errors.Is works across PEs.
func Agree(b Bootstrap, err error) error {
	var msg []byte
	if err != nil {
		msg = append([]byte{ErrorCode(err)}, err.Error()...)
	}
	all, gerr := b.Allgather(msg)
	if gerr != nil {
		return errors.Join(err, gerr)
	}
	var errs multiError
	if err != nil {
		errs = append(errs, err)
	}
	for pe, m := range all {
		if len(m) != 0 && pe != b.Rank() {
			// A code this version does not know leaves the error without
			// a sentinel: its text still says what happened.
			kind, _ := ErrorOfCode(m[0])
			errs = append(errs, &RemoteError{PE: pe, Msg: string(m[1:]), Kind: kind})
		}
	}
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return errs
}

// multiError joins errors on one line, as log lines and exit messages want.
type multiError []error

func (m multiError) Error() string {
	s := make([]string, len(m))
	for i, e := range m {
		s[i] = e.Error()
	}
	return strings.Join(s, "; ")
}

func (m multiError) Unwrap() []error { return m }

// HostID identifies the host this process runs on, for locality decisions:
// the host name and, where the kernel offers it, the boot id, then the
// emulated host GOSHMEM_EMULATED_HOST names, if it is set and well formed
// (Open fails every PE on a malformed one). lookup is the job's
// environment; nil means the process environment.
func HostID(lookup func(string) (string, bool)) string {
	h, _ := os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		h += "/" + strings.TrimSpace(string(b))
	}
	if emu, err := EmulatedHost(lookup); err == nil && emu != "" {
		h += "#" + emu
	}
	return h
}

// EnvEmulatedHost names the emulated host a process runs on, within its
// machine: PEs of one machine that name different emulated hosts count as
// on different hosts (their pairs go through the inter-host provider, not
// shared memory), as the PEs of a ring of hosts that a device emulator
// runs on one machine are. It only splits a machine: PEs of different
// machines never count as one host, whatever they name.
const EnvEmulatedHost = "GOSHMEM_EMULATED_HOST"

// maxEmulatedHost bounds the length of GOSHMEM_EMULATED_HOST.
const maxEmulatedHost = 64

// EmulatedHost reads GOSHMEM_EMULATED_HOST from lookup (nil: the process
// environment): "" when unset or empty, else the name, which must be 1 to
// 64 letters, digits, '.', '-' or '_'.
func EmulatedHost(lookup func(string) (string, bool)) (string, error) {
	v, ok := EmulatedHostParam.Lookup(lookup)
	if !ok {
		return "", nil
	}
	bad := len(v) > maxEmulatedHost || strings.ContainsFunc(v, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_')
	})
	if bad {
		return "", &EnvError{Var: EnvEmulatedHost, Value: v,
			Allowed: fmt.Sprintf("unset, or a name of 1 to %d letters, digits, '.', '-' or '_': the emulated host this PE runs on within its machine", maxEmulatedHost)}
	}
	return v, nil
}
