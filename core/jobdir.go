package core

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/goshmem/goshmem/internal/proc"
)

// A job directory records the processes that use it, one file each,
// so that anyone can tell a dead job's directory from a live one's: a job
// whose processes were all killed (its launcher killed with -9, or PEs
// started by srun that crashed) leaves its files behind, and nobody else
// would ever remove them.
//
//	owner.<pid>   "<pid> <start>\n": the process and its start time in
//	              clock ticks since boot (0 where the system cannot say),
//	              so a pid handed to a new process is not taken for the
//	              old one
//
// A process becomes an owner in MakeJobDir and stops being one in
// LeaveJobDir; the last to leave removes the directory, empty after a
// clean run. SweepJobDirs removes the directories of dead jobs.
const (
	jobDirPrefix = "goshmem-"
	ownerPrefix  = "owner."
)

// owned counts, per job directory, the domains of this process that
// made it and have not left. Holding ownedMu while making, joining and
// leaving keeps two domains of one process from racing the last one's
// removal of the directory.
var (
	ownedMu sync.Mutex
	owned   = map[string]int{}
)

func ownerFile(dir string, pid int) string {
	return filepath.Join(dir, ownerPrefix+strconv.Itoa(pid))
}

// own records this process as an owner of dir, which exists. Called with
// ownedMu held.
func own(dir string) error {
	if owned[dir] > 0 {
		owned[dir]++
		return nil
	}
	pid := os.Getpid()
	start, _ := proc.Start(pid)
	if err := os.WriteFile(ownerFile(dir, pid), fmt.Appendf(nil, "%d %d\n", pid, start), 0o600); err != nil {
		return err
	}
	owned[dir] = 1
	return nil
}

// LeaveJobDir undoes one MakeJobDir of this process: when the process's
// last domain on the job leaves, it stops being an owner, and if no other
// process owns the directory and nothing is left in it, the directory is
// removed. Providers call it when a domain closes, after removing their
// own files; a directory other processes still use stays (removing a
// non-empty directory fails, which is how the last one out is found).
func LeaveJobDir(dir string) error {
	ownedMu.Lock()
	defer ownedMu.Unlock()
	switch n := owned[dir]; {
	case n == 0:
		return nil
	case n > 1:
		owned[dir] = n - 1
		return nil
	}
	delete(owned, dir)
	if err := os.Remove(ownerFile(dir, os.Getpid())); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("job directory: %w", err)
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) && !dirNotEmpty(err) {
		return fmt.Errorf("job directory: %w", err)
	}
	return nil
}

// dirNotEmpty reports whether removing a directory failed because
// something is still in it.
func dirNotEmpty(err error) bool {
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return false
	}
	// ENOTEMPTY, or EEXIST where the system says so instead.
	return errors.Is(pe.Err, fs.ErrExist) || strings.Contains(pe.Err.Error(), "not empty")
}

// sweptMu and swept make every process sweep each directory of job
// directories once, when it first makes a job directory there.
var (
	sweptMu sync.Mutex
	swept   = map[string]bool{}
)

func sweepOnce(lookup func(string) (string, bool)) {
	parent := ShmDir(lookup)
	sweptMu.Lock()
	done := swept[parent]
	swept[parent] = true
	sweptMu.Unlock()
	if !done {
		SweepJobDirs(lookup)
	}
}

// SweepJobDirs removes the job directories (goshmem-*, in GOSHMEM_SHM_DIR
// or its default) of dead jobs and returns the ones it removed. A job is
// dead when every process recorded in its directory has exited. A
// directory that records no process (one being made this instant, or made
// by something else) and the directories of this process's own domains
// are left alone, as is anything that is not a directory. PEs sweep when
// they first make a job directory, and the launcher when it starts a job,
// so a crashed job's files last until the next job on the host.
func SweepJobDirs(lookup func(string) (string, bool)) []string {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	parent := ShmDir(lookup)
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		// A DirEntry's type is the entry's own: a link to a directory is
		// not a directory here, and is never followed.
		if !e.IsDir() || !strings.HasPrefix(e.Name(), jobDirPrefix) {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		ownedMu.Lock()
		mine := owned[dir] > 0
		ownedMu.Unlock()
		if mine || !deadJob(dir) {
			continue
		}
		if os.RemoveAll(dir) == nil {
			removed = append(removed, dir)
		}
	}
	return removed
}

// deadJob reports whether dir records at least one owner and every owner
// has exited.
func deadJob(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	owners := 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ownerPrefix) || !e.Type().IsRegular() {
			continue
		}
		owners++
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return false
		}
		var pid int
		var start uint64
		if n, _ := fmt.Sscanf(string(b), "%d %d", &pid, &start); n != 2 || strconv.Itoa(pid) != strings.TrimPrefix(e.Name(), ownerPrefix) {
			return false // not a record of ours: not ours to judge
		}
		if ownerAlive(pid, start) {
			return false
		}
	}
	return owners > 0
}

// ownerAlive reports whether the recorded process still runs: a process
// of that pid lives, and it is the one that was recorded.
func ownerAlive(pid int, start uint64) bool {
	if !proc.Alive(pid) {
		return false
	}
	now, ok := proc.Start(pid)
	return !ok || start == 0 || now == start
}
