package shmem

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/goshmem/goshmem/core"
)

// jobFacts is what every PE must agree on before it opens a provider: the
// symmetric heap's size, without which PEs would address each other's
// memory at the wrong offsets, and the program, without which they would
// agree on a heap layout that means different things on different PEs.
//
// Host, the PE's host id, and Avail, the memory its host had available
// before any PE made its heap (0 if unknown), are no such facts: they
// ride along so that every PE learns how many PEs share its host, which
// the waiting policy needs before the provider opens (see core.Waiting),
// and how much memory they found, so that all of them decide alike
// whether their heaps fit (checkHostMemory).
type jobFacts struct {
	HeapSize int         `json:"heap"`
	Program  fingerprint `json:"prog"`
	Host     string      `json:"host,omitempty"`
	Avail    int64       `json:"avail,omitempty"`
}

// hostView is what checkJob learns of this PE's host: how many of the
// job's PEs it runs, and the least memory any of them found available
// (availKnown false if none could tell).
type hostView struct {
	pes        int
	avail      int64
	availKnown bool
}

// fingerprint identifies a program: its executable's name, size and
// content hash, and what the Go toolchain recorded when building it.
type fingerprint struct {
	Exe     string `json:"exe"`
	Size    int64  `json:"size"`
	SHA256  string `json:"sha256"`
	Go      string `json:"go"`
	Module  string `json:"mod"`
	VCSRev  string `json:"vcs"`
	Problem string `json:"err,omitempty"` // why the executable could not be read
}

// fields lists the fingerprint's parts by name, in the order a mismatch
// names them.
func (f fingerprint) fields() [][2]string {
	return [][2]string{
		{"executable", f.Exe}, {"size", fmt.Sprint(f.Size)}, {"sha256", f.SHA256},
		{"go version", f.Go}, {"main module", f.Module}, {"vcs revision", f.VCSRev},
	}
}

func (f fingerprint) String() string {
	s := fmt.Sprintf("%s (%d bytes, sha256 %s, %s, %s)", f.Exe, f.Size, f.SHA256, f.Go, f.Module)
	if f.Problem != "" {
		s += " [" + f.Problem + "]"
	}
	return s
}

// programFingerprint is this process's fingerprint. It is computed once
// per process: every PE of the process runs the same executable.
var programFingerprint = sync.OnceValue(func() fingerprint {
	var f fingerprint
	if bi, ok := debug.ReadBuildInfo(); ok {
		f.Go, f.Module = bi.GoVersion, bi.Main.Path+"@"+bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				f.VCSRev = s.Value
			}
		}
	}
	exe, err := os.Executable()
	if err != nil {
		f.Problem = err.Error()
		return f
	}
	f.Exe = filepath.Base(exe)
	file, err := os.Open(exe)
	if err != nil {
		f.Problem = err.Error()
		return f
	}
	defer file.Close()
	h := sha256.New()
	n, err := io.Copy(h, file)
	if err != nil {
		f.Problem = err.Error()
	}
	f.Size = n
	f.SHA256 = hex.EncodeToString(h.Sum(nil))[:16]
	return f
})

func (j jobFacts) encode() []byte {
	b, _ := json.Marshal(j) // strings and integers always marshal
	return b
}

// decodeJobFacts parses another PE's facts.
func decodeJobFacts(b []byte) (jobFacts, error) {
	var j jobFacts
	if err := json.Unmarshal(b, &j); err != nil {
		return jobFacts{}, fmt.Errorf("malformed job facts from a PE (%d bytes): %v: %w", len(b), err, core.ErrInvalid)
	}
	return j, nil
}

// checkJob gathers every PE's facts and fails, on every PE alike, if they
// differ, naming which PEs differ and in what. It returns what the PEs
// told of this PE's host.
func checkJob(boot core.Bootstrap, mine jobFacts) (hostView, error) {
	var host hostView
	all, err := boot.Allgather(mine.encode())
	if err != nil {
		return host, err
	}
	facts := make([]jobFacts, len(all))
	for pe, b := range all {
		if facts[pe], err = decodeJobFacts(b); err != nil {
			return host, fmt.Errorf("PE %d: %w", pe, err)
		}
		if f := facts[pe]; f.Host == mine.Host {
			host.pes++
			if f.Avail > 0 && (!host.availKnown || f.Avail < host.avail) {
				host.avail, host.availKnown = f.Avail, true
			}
		}
	}
	return host, checkFacts(facts)
}

// checkFacts fails if the PEs' facts differ, naming which PEs differ and
// in what.
func checkFacts(facts []jobFacts) error {
	var problems []string
	if p := core.DescribePEs(facts, func(j jobFacts) string { return fmt.Sprintf("%d bytes", j.HeapSize) }); p != "" {
		problems = append(problems, fmt.Sprintf("%s differs between PEs (%s); every PE must use the same heap size", EnvSymmetricSize, p))
	}
	if p := core.DescribePEs(facts, func(j jobFacts) string { return j.Program.String() }); p != "" {
		problems = append(problems, fmt.Sprintf("PEs run different programs (%s), differing in %s; every PE must run the same executable",
			p, strings.Join(fingerprintDiff(facts), ", ")))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %w", strings.Join(problems, "; "), core.ErrInvalid)
}

// fingerprintDiff names the parts of the fingerprint that differ.
func fingerprintDiff(facts []jobFacts) []string {
	var names []string
	ref := facts[0].Program.fields()
	for _, j := range facts[1:] {
		for i, f := range j.Program.fields() {
			if f[1] != ref[i][1] && !slices.Contains(names, f[0]) {
				names = append(names, f[0])
			}
		}
	}
	if len(names) == 0 {
		names = append(names, "how the executable could be read")
	}
	return names
}
