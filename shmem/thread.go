package shmem

import (
	"fmt"

	"github.com/goshmem/goshmem/core"
)

// ThreadLevel is how goroutines may call into a World
// (shmem_init_thread's levels).
type ThreadLevel uint8

const (
	// ThreadSingle: one goroutine calls into the World.
	ThreadSingle ThreadLevel = iota + 1
	// ThreadFunneled: several goroutines exist, only the one that called
	// Init calls into the World.
	ThreadFunneled
	// ThreadSerialized: any goroutine calls, never two at once.
	ThreadSerialized
	// ThreadMultiple: any goroutines call at once, sharing the default
	// context or using contexts of their own. Collectives on one team are
	// still called by one goroutine at a time.
	ThreadMultiple
)

var threadNames = [...]string{"", "ThreadSingle", "ThreadFunneled", "ThreadSerialized", "ThreadMultiple"}

func (l ThreadLevel) String() string {
	if l >= ThreadSingle && l <= ThreadMultiple {
		return threadNames[l]
	}
	return fmt.Sprintf("ThreadLevel(%d)", uint8(l))
}

// WithThreadLevel asks Init for a thread level (shmem_init_thread). Every
// level is provided as asked; without this option a World is at
// ThreadMultiple, since Go programs rarely keep to one goroutine.
func WithThreadLevel(l ThreadLevel) Option { return func(o *options) { o.thread = l } }

// QueryThread returns the thread level the World was initialized with
// (shmem_query_thread).
func (w *World) QueryThread() ThreadLevel { return w.thread }

// check accepts the zero value, which means the default.
func (l ThreadLevel) check() error {
	if l > ThreadMultiple {
		return fmt.Errorf("thread level %d is not one of ThreadSingle, ThreadFunneled, ThreadSerialized, ThreadMultiple: %w",
			uint8(l), core.ErrInvalid)
	}
	return nil
}

func (l ThreadLevel) orDefault() ThreadLevel {
	if l == 0 {
		return ThreadMultiple
	}
	return l
}
