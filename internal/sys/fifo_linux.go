package sys

import (
	"os"

	"golang.org/x/sys/unix"
)

// MakeFIFO creates a named pipe at path, 0600, replacing a stale one.
func MakeFIFO(path string) error {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return unix.Mkfifo(path, 0o600)
}
