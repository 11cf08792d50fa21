package ntbring

import (
	"errors"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/ntb"
	"github.com/goshmem/goshmem/internal/ntb/emu"
)

// ringPorts are this host's two NT ports and how to let go of them.
type ringPorts struct {
	left, right ntb.Port
	close       func() error
}

// openRing attaches this host to the ring's device: the emulated PLX NT
// ports, with their files in the job's directory and the emulator's
// GOSHMEM_NTB_* settings. tag keeps the files of two domains of one job
// apart. A hardware backend would be chosen here.
func openRing(cfg *core.Config, host, n int, tag string) (*ringPorts, error) {
	opts, err := emu.OptionsFromEnv(cfg.Lookup, n)
	if err != nil {
		return nil, err
	}
	opts.Tag = tag
	h, err := emu.Open(cfg.JobDir(), host, n, opts)
	if err != nil {
		return nil, err
	}
	// emu.Host.Close is idempotent: a second close is a no-op.
	return &ringPorts{left: h.Left, right: h.Right, close: h.Close}, nil
}

// closeQuietly releases ports opened on a path that already failed.
func (r *ringPorts) closeQuietly(err error) error {
	if r == nil {
		return err
	}
	return errors.Join(err, r.close())
}
