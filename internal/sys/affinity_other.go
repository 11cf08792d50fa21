//go:build !linux

package sys

import "errors"

// CPUs cannot tell on this system.
func CPUs() ([]int, error) { return nil, errors.ErrUnsupported }

// OnCPUs calls f unbound: this system has no binding to offer.
func OnCPUs(cpus []int, f func() error) error { return f() }
