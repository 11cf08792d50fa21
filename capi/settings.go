package main

/*
#include <stdlib.h>
#include "handles.h"
*/
import "C"

import (
	"unsafe"

	"github.com/goshmem/goshmem/capi/cenv"
	"github.com/goshmem/goshmem/core"
)

// cEnv is a C program's job environment: the C environment as it is at
// the call, setenv before shmem_init included, which the copy Go's os
// package took when the library loaded would miss.
func cEnv(k string) (string, bool) {
	ck := C.CString(k)
	defer C.free(unsafe.Pointer(ck))
	v := C.getenv(ck)
	if v == nil {
		return "", false
	}
	return C.GoString(v), true
}

// readSettings reads the C library's variables from the C environment
// (cEnv) through the registry, and
// hands C what they say (struct gsh_settings): C parses nothing itself.
// It returns GOSHMEM_C_EXTRA_PROCS, which Go applies after Init.
func readSettings() (extra int, err error) {
	var on [3]bool
	for i, p := range []core.Param{cenv.Defer, cenv.Window, cenv.FastPath} {
		if on[i], err = p.Bool(cEnv); err != nil {
			return 0, err
		}
	}
	cpus, err := (&core.Config{Env: cEnv}).CPUs()
	if err != nil {
		return 0, err
	}
	if extra, err = extraProcs(cEnv); err != nil {
		return 0, err
	}
	C.gsh_settings.defer_on, C.gsh_settings.window_on, C.gsh_settings.fast_path_on = cbool(on[0]), cbool(on[1]), cbool(on[2])
	C.gsh_settings.cpus = C.long(cpus)
	return extra, nil
}

// debugOn says whether SHMEM_DEBUG is on; a malformed value, which
// shmem_init refuses, counts as off.
func debugOn() bool {
	on, _ := core.DebugParam.Bool(cEnv)
	return on
}
