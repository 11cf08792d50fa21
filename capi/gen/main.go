// Command gen writes goshmem's public C header (include/shmem.h and
// include/shmemx.h) and the typed routines behind it (capi/typed_gen.c)
// from one set of tables of the OpenSHMEM 1.6 types, so the header's
// declarations, the type-generic interfaces and the definitions cannot
// disagree. It runs from capi by go generate.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// files returns every generated file by its path from the module root.
func files() map[string][]byte {
	a := build()
	return map[string][]byte{
		"include/shmem.h":      []byte(a.header()),
		"include/shmemx.h":     []byte(a.shmemxHeader()),
		"include/mpp/shmem.h":  []byte(mppHeader("shmem.h")),
		"include/mpp/shmemx.h": []byte(mppHeader("shmemx.h")),
		"capi/typed_gen.c":     []byte(a.typed()),
		"include/pshmem.h":     []byte(a.pheader()),
		"capi/pshmem_gen.h":    []byte(a.runtimeAliases()),
	}
}

// write puts the files under root, leaving alone those already current
// so that builds which look at times do no needless work.
func write(root string) error {
	for rel, data := range files() {
		path := filepath.Join(root, filepath.FromSlash(rel))
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func main() {
	root := flag.String("root", "..", "the module root, where include/ and capi/ are")
	flag.Parse()
	if err := write(*root); err != nil {
		fmt.Fprintln(os.Stderr, "capi/gen:", err)
		os.Exit(1)
	}
}
