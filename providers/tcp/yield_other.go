//go:build !linux

package tcp

import "github.com/goshmem/goshmem/internal/sys"

// yield gives the CPU to another thread, as a poll does between looks.
func yield() { sys.Yield() }
