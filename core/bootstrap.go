package core

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// Bootstrap is the job's out-of-band channel, used while providers open and
// close and by shmem before a domain exists. Collectives are called by every
// member in the same order. Implementations live in core/bootstrap: in one
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

// Agree makes a local error collective: every member contributes its error
// (or none) and every member gets the same result, nil only if all
// succeeded. Providers call it after each fallible step of Open, so a
// failure on one PE never leaves the others waiting.
func Agree(b Bootstrap, err error) error {
	var msg []byte
	if err != nil {
		msg = []byte(err.Error())
		if len(msg) == 0 {
			msg = []byte("error")
		}
	}
	all, gerr := b.Allgather(msg)
	if gerr != nil {
		return errors.Join(err, gerr)
	}
	var failed []string
	for pe, m := range all {
		if len(m) != 0 && pe != b.Rank() {
			failed = append(failed, fmt.Sprintf("PE %d: %s", pe, m))
		}
	}
	if len(failed) == 0 {
		return err
	}
	remote := fmt.Errorf("%s", strings.Join(failed, "; "))
	if err != nil {
		return fmt.Errorf("%w; %w", err, remote)
	}
	return remote
}

// HostID identifies the host this process runs on, for locality decisions:
// the host name and, where the kernel offers it, the boot id.
func HostID() string {
	h, _ := os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		h += "/" + strings.TrimSpace(string(b))
	}
	return h
}
