// Command goshmem-provider-loopback-plugin is the loopback provider served
// as an out-of-tree provider: a plugin executable that goshmem programs
// find on GOSHMEM_PROVIDER_PATH and list and select as the provider
// "loopback-plugin". It shows what a vendor's provider executable looks
// like: a main that hands a core.Provider to plugin.Serve. Started by
// hand, it says it is a plugin and exits with status 1.
package main

import (
	"fmt"
	"os"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/providers/loopback"
	"github.com/goshmem/goshmem/providers/plugin"
)

func main() {
	p, err := core.Lookup(loopback.Name)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	plugin.Serve(p)
}
