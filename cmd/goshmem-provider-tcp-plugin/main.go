// Command goshmem-provider-tcp-plugin is the tcp provider served as an
// out-of-tree provider: a plugin executable that goshmem programs which
// import providers/plugin find on GOSHMEM_PROVIDER_PATH and select by
// name as the provider "tcp-plugin". It is the example of docs/plugins.md:
// a network provider, whose regions are its own memory, served through
// the plugin boundary. Started by hand, it says it is a plugin and exits
// with status 1; with -manifest it prints its manifest.
package main

import (
	"fmt"
	"os"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/providers/plugin"
	"github.com/goshmem/goshmem/providers/tcp"
)

func main() {
	p, err := core.Lookup(tcp.Name)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	plugin.Serve(p)
}
