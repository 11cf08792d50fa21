package provkit

import "sync/atomic"

// WaitNotify is a domain's side of core.WaitNotifier: the function a
// composite asked to be told of changes with, which the domain calls
// where it wakes its own waiters. The zero value tells nobody.
type WaitNotify struct {
	f atomic.Pointer[func()]
}

// Set makes f the function to tell (nil: nobody), for SetWaitNotify.
func (n *WaitNotify) Set(f func()) {
	if f == nil {
		n.f.Store(nil)
		return
	}
	n.f.Store(&f)
}

// Tell calls the function, if one is set.
func (n *WaitNotify) Tell() {
	if f := n.f.Load(); f != nil {
		(*f)()
	}
}
