//go:build !linux

package sys

import "errors"

// CPUs cannot tell on this system.
func CPUs() ([]int, error) { return nil, errors.ErrUnsupported }

// OnCPU calls f unbound: this system has no binding to offer.
func OnCPU(cpu int, f func() error) error { return f() }
