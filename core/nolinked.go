package core

import (
	"errors"
	"fmt"
)

// ErrNoProviderLinked is the error of a program that links no provider:
// one that imports shmem but neither providers/all nor a provider package.
// No GOSHMEM_PROVIDER value can help such a program, so selection says how
// to link one instead of naming a setting.
var ErrNoProviderLinked = errors.New("no provider is linked into this program")

// linkHint is how a program links the built-in providers.
const linkHint = `import _ "github.com/goshmem/goshmem/providers/all" in the program's main package ` +
	`(or a single provider, such as providers/loopback) and rebuild it`

// noProviderLinked returns an error wrapping ErrNoProviderLinked and
// ErrNotSupported when no provider is registered, else nil.
func noProviderLinked() error {
	if len(Names()) > 0 {
		return nil
	}
	return fmt.Errorf("%w: %s: %w", ErrNoProviderLinked, linkHint, ErrNotSupported)
}
