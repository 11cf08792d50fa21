package core

import (
	"bytes"
	"os"
	"strconv"
)

// MemAvailable is how much memory this host can give programs without
// swapping or taking it from the ones running (MemAvailable in
// /proc/meminfo), in bytes; ok is false where the host does not say.
func MemAvailable() (n int64, ok bool) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	return ParseMemAvailable(b)
}

// ParseMemAvailable reads the MemAvailable line of /proc/meminfo's
// contents b ("MemAvailable:   23685532 kB").
func ParseMemAvailable(b []byte) (n int64, ok bool) {
	for line := range bytes.Lines(b) {
		rest, found := bytes.CutPrefix(line, []byte("MemAvailable:"))
		if !found {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil || kb < 0 || kb > 1<<53 {
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}
