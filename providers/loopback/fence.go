package loopback

import (
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

// allAsymmetric reads the fence flags of Open's exchange (after sameHost
// checked its length): the job fences asymmetrically only if every PE
// registered, since a waiter's barrier interrupts registered processes
// alone, and a writer that skips its fence needs every waiter to pay.
func allAsymmetric(all [][]byte) (bool, error) { return allSet(all, fenceOff, "fence flag") }
