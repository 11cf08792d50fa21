package shmem

import (
	"fmt"

	"github.com/goshmem/goshmem/core"
)

// Invalid handles. The nil *Team is SHMEM_TEAM_INVALID and the nil
// *Context is SHMEM_CTX_INVALID; a program compares a handle with nil to
// tell whether it is valid, as a C program compares it with the constant.
//
// A split gives the PEs it leaves out the nil team, with no error, and a
// failed split, team context creation or NewContext returns the nil handle
// with its error. On the nil team, MyPE and NPEs return -1, Translate
// returns -1, Member returns -1, Config returns the zero TeamConfig,
// GetConfig, Sync, splits, CreateCtx and the collectives return an error
// wrapping ErrInvalid, and Destroy does nothing. On the nil context,
// Destroy does nothing, Team returns the nil team, and Quiet and Fence
// return an error wrapping ErrInvalid; other operations on it are
// undefined, as in the spec, and may panic.

// GetConfig returns the configuration the team was created with
// (shmem_team_get_config), or an error wrapping ErrInvalid for the nil
// team and ErrClosed for a destroyed one.
func (t *Team) GetConfig() (TeamConfig, error) {
	if t == nil {
		return TeamConfig{}, fmt.Errorf("shmem: team get_config: the invalid (nil) team has no configuration: %w", core.ErrInvalid)
	}
	if t.dead.Load() {
		return TeamConfig{}, fmt.Errorf("shmem: team get_config: team was destroyed: %w", core.ErrClosed)
	}
	return t.config, nil
}

func invalidCtx(op string) error {
	return fmt.Errorf("shmem: %s: the invalid (nil) context: %w", op, core.ErrInvalid)
}
