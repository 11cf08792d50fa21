//go:build amd64 || 386 || s390x

package loopback

// storesOrdered: this machine makes a core's stores visible in program
// order (total store order), so puts keep their order (Info's
// OrderPutPut) without a fence between them.
const storesOrdered = true
