//go:build !(amd64 || 386 || s390x)

package loopback

// storesOrdered: this machine may make a core's stores visible out of
// order, so every operation keeps its fence (see endpoint) to keep
// Info's OrderPutPut.
const storesOrdered = false
