//go:build !linux

package sys

// ProcessAlive cannot tell on this system and reports every positive id
// alive, so callers fall back on their own timeouts.
func ProcessAlive(pid int) bool { return pid > 0 }

// ProcessStart cannot tell on this system.
func ProcessStart(pid int) (uint64, bool) { return 0, false }
