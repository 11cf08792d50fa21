package shmem

import "time"

// WithProgram makes the PE pose as running a program with the given
// executable name and content hash, to test the start-up check.
func WithProgram(exe, sha string) Option {
	return func(o *options) {
		f := programFingerprint()
		f.Exe, f.SHA256 = exe, sha
		o.program = &f
	}
}

// DecodeJobFacts exposes the decoder of other PEs' start-up facts to the
// fuzz test: the heap size and executable name it read.
func DecodeJobFacts(b []byte) (int, string, error) {
	j, err := decodeJobFacts(b)
	return j.HeapSize, j.Program.Exe, err
}

// EncodeJobFacts makes a valid encoding for the fuzz test's seeds.
func EncodeJobFacts(heap int, exe string) []byte {
	return jobFacts{HeapSize: heap, Program: fingerprint{Exe: exe, Size: 1, SHA256: "00"}}.encode()
}

// WaitSliceOf is the longest sleep of w's waiters.
func WaitSliceOf(w *World) time.Duration { return w.slice }
