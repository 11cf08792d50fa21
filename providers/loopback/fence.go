package loopback

import (
	"fmt"
	"strings"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/sys"
)

// paramFence chooses who pays for the handshake between a writer and a
// waiter (see notify): "auto" lets puts and gets on an endpoint of one
// goroutine skip their fence, and a waiter pays instead with one
// membarrier(2) before it sleeps, where the kernel has the command and the
// machine keeps stores in order; "atomic" fences every operation.
var paramFence = core.NewParam(Name, "FENCE", "auto",
	`who fences the wake-up handshake: auto (a sleeping waiter, with membarrier, where available) or atomic (every operation)`)

// wantAsymmetric reads GOSHMEM_LOOPBACK_FENCE and reports whether this PE
// can take the asymmetric fence: asked for, stores kept in order by the
// hardware, and this process registered for sys.GlobalBarrier. The job
// takes it only if every PE can (see Open).
func wantAsymmetric(cfg *core.Config) (bool, error) {
	switch v := strings.TrimSpace(cfg.Value(paramFence)); v {
	case "atomic":
		return false, nil
	case "auto":
		return storesOrdered && sys.RegisterGlobalBarrier() == nil, nil
	default:
		return false, &core.EnvError{Var: paramFence.Env, Value: v, Allowed: `"auto" or "atomic"`}
	}
}

// fenceFlag encodes wantAsymmetric's answer for Open's exchange.
func fenceFlag(asym bool) byte {
	if asym {
		return 1
	}
	return 0
}

// allAsymmetric reads the flags of Open's exchange (after sameHost checked
// its length): the job fences asymmetrically only if every PE registered,
// since a waiter's barrier interrupts registered processes alone, and a
// writer that skips its fence needs every waiter to pay.
func allAsymmetric(all [][]byte) (bool, error) {
	for pe, m := range all {
		switch m[fenceOff] {
		case 0:
			return false, nil
		case 1:
		default:
			return false, fmt.Errorf("PE %d sent fence flag %d, not 0 or 1: %w", pe, m[fenceOff], core.ErrInvalid)
		}
	}
	return true, nil
}
