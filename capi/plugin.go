package main

// A C program cannot add an import, and chooses its provider only by
// name at run time: the library links the plugin host, so a plugin
// provider on GOSHMEM_PROVIDER_PATH serves C programs as it serves Go
// programs that import it. Automatic selection still never starts one.
import _ "github.com/goshmem/goshmem/providers/plugin"
