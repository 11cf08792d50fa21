//go:build !linux

package sys

import (
	"errors"
	"time"
)

// CPUStall reads how long runnable threads have waited for a CPU; only
// Linux keeps that count.
type CPUStall struct{}

// OpenCPUStall fails: only Linux keeps CPU pressure information.
func OpenCPUStall() (*CPUStall, error) { return nil, errors.ErrUnsupported }

// Total is never reached: OpenCPUStall always fails here.
func (*CPUStall) Total() (time.Duration, error) { return 0, errors.ErrUnsupported }

// Close does nothing.
func (*CPUStall) Close() error { return nil }
