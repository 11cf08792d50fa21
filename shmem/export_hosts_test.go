package shmem

// WithHostMap poses the PEs of a job on one host as spread over hosts,
// hostOf giving each PE's, for the collectives only: a test compares the
// host-aware collectives with the flat ones over loopback.
func WithHostMap(hostOf []int) Option { return func(o *options) { o.hostMap = hostOf } }

// HostAware reports whether the World's collectives know the hosts.
func (w *World) HostAware() bool { return w.coll.hostAware }
