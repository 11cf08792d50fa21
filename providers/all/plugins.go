package all

import "github.com/goshmem/goshmem/providers/plugin"

// Plugin executables on GOSHMEM_PROVIDER_PATH register here, after every
// built-in provider this package imports (a package's init runs after
// those of its imports): a built-in name always wins over a plugin's.
func init() { plugin.RegisterFound(nil) }
