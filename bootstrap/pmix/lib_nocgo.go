//go:build !cgo

package pmix

import "errors"

// cgoBuilt: a build without cgo cannot load libpmix.
const cgoBuilt = false

var errNoCgo = errors.New("this program was built without cgo (CGO_ENABLED=0), so it cannot load libpmix; rebuild it with cgo")

func load(name string) error { return &LibError{Name: name, Reason: errNoCgo.Error(), NoCgo: true} }

func libVersion() string                               { return "" }
func libInit() (string, uint32, error)                 { return "", 0, errNoCgo }
func libGetUint(uint32, string, int) (uint64, error)   { return 0, errNoCgo }
func libGetString(uint32, string, int) (string, error) { return "", errNoCgo }
func libPut(string, string) error                      { return errNoCgo }
func libCommit() error                                 { return errNoCgo }
func libFence(int) error                               { return errNoCgo }
func libAbort(int, string) error                       { return errNoCgo }
func libFinalize() error                               { return errNoCgo }
func layout() (proc, value, info int)                  { return 0, 0, 0 }

const rankWildcard = ^uint32(0) - 1
