package shmem

import (
	"fmt"

	"github.com/goshmem/goshmem/core"
)

// Non-blocking fetching atomics (shmem_atomic_fetch_*_nbi) write the old
// value of *dst on pe to *fetch, a local variable, by the next Quiet on c.
// Here the atomic executes before the call returns, which the spec
// allows: *fetch already holds the value then, and a failed operation is
// reported by the call itself rather than by the Quiet.

func fetchNBI[T AMOExt](c Ctx, fetch, dst *T, op core.AtomicOp, v, cmp T, pe int) error {
	if fetch == nil {
		return fmt.Errorf("shmem: atomic %s nbi: the fetch pointer is nil: %w", op, core.ErrInvalid)
	}
	old, err := fetchOp(c, dst, op, v, cmp, pe)
	if err != nil {
		return err
	}
	*fetch = old
	return nil
}

// AtomicFetchNBI is AtomicFetch delivering to *fetch (shmem_atomic_fetch_nbi).
func AtomicFetchNBI[T AMOExt](c Ctx, fetch, dst *T, pe int) error {
	return fetchNBI(c, fetch, dst, core.AtomicRead, 0, 0, pe)
}

// AtomicSwapNBI is AtomicSwap delivering to *fetch (shmem_atomic_swap_nbi).
func AtomicSwapNBI[T AMOExt](c Ctx, fetch, dst *T, v T, pe int) error {
	return fetchNBI(c, fetch, dst, core.AtomicSwap, v, 0, pe)
}

// AtomicCompareSwapNBI is AtomicCompareSwap delivering to *fetch
// (shmem_atomic_compare_swap_nbi).
func AtomicCompareSwapNBI[T AMOInt](c Ctx, fetch, dst *T, cond, v T, pe int) error {
	return fetchNBI(c, fetch, dst, core.AtomicCSwap, v, cond, pe)
}

// AtomicFetchAddNBI is AtomicFetchAdd delivering to *fetch (shmem_atomic_fetch_add_nbi).
func AtomicFetchAddNBI[T AMOInt](c Ctx, fetch, dst *T, v T, pe int) error {
	return fetchNBI(c, fetch, dst, core.AtomicAdd, v, 0, pe)
}

// AtomicFetchIncNBI is AtomicFetchInc delivering to *fetch (shmem_atomic_fetch_inc_nbi).
func AtomicFetchIncNBI[T AMOInt](c Ctx, fetch, dst *T, pe int) error {
	return fetchNBI(c, fetch, dst, core.AtomicAdd, 1, 0, pe)
}

// AtomicFetchAndNBI, AtomicFetchOrNBI and AtomicFetchXorNBI are the
// bitwise fetching atomics delivering to *fetch
// (shmem_atomic_fetch_{and,or,xor}_nbi).
func AtomicFetchAndNBI[T AMOInt](c Ctx, fetch, dst *T, v T, pe int) error {
	return fetchNBI(c, fetch, dst, core.AtomicAnd, v, 0, pe)
}

func AtomicFetchOrNBI[T AMOInt](c Ctx, fetch, dst *T, v T, pe int) error {
	return fetchNBI(c, fetch, dst, core.AtomicOr, v, 0, pe)
}

func AtomicFetchXorNBI[T AMOInt](c Ctx, fetch, dst *T, v T, pe int) error {
	return fetchNBI(c, fetch, dst, core.AtomicXor, v, 0, pe)
}
