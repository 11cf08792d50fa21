package shmem

import "sync/atomic"

// The levels of PControl the spec names; other values are accepted and
// recorded, with no meaning of their own.
const (
	PControlOff     = 0 // profiling disabled
	PControlDefault = 1 // the level a World starts at
	PControlDetail  = 2 // profile buffers flushed, profiling in detail
)

// pcontrolState is the level PControl last set. It is kept as the
// difference from PControlDefault, so the zero value of a World already
// holds the default level without Init having to set it.
type pcontrolState struct{ delta atomic.Int64 }

// PControl sets the profiling level (shmem_pcontrol): PControlOff,
// PControlDefault or PControlDetail, or any other value for a profiling
// library to interpret. This library has no profiling of its own, so the
// level changes no result and costs nothing; it is recorded for
// PControlLevel, and with SHMEM_DEBUG set a change of level is logged, so
// the regions a program marks show in its debug output.
func (w *World) PControl(level int) {
	old := int(w.prof.delta.Swap(int64(level-PControlDefault))) + PControlDefault
	if old != level {
		w.log.Debug("pcontrol", "level", level, "was", old)
	}
}

// PControlLevel is the level PControl last set, PControlDefault if it was
// never called.
func (w *World) PControlLevel() int { return int(w.prof.delta.Load()) + PControlDefault }
