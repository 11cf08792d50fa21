// Package all links every built-in provider into a program: import it for
// its side effect.
//
//	import _ "github.com/goshmem/goshmem/providers/all"
package all

import (
	_ "github.com/goshmem/goshmem/providers/hybrid"
	_ "github.com/goshmem/goshmem/providers/loopback"
	_ "github.com/goshmem/goshmem/providers/ntbring"
	_ "github.com/goshmem/goshmem/providers/tcp"
)
