package launcher

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A PE that calls global_exit tells the launcher by leaving a file in the
// job's directory before it exits: the launcher, seeing a PE exit, reads
// it and ends the whole job with that PE's status, even 0.
const globalExitFile = "global-exit"

// WriteGlobalExit records, in the job directory jobDir, that PE pe called
// global_exit(status). The file appears whole or not at all, and is on
// disk when WriteGlobalExit returns: a caller tells the other PEs of its
// exit only then, so the launcher can find the record whenever a PE
// leaves because it saw the exit.
func WriteGlobalExit(jobDir string, pe, status int) error {
	// The job directory only: the directory above it is the user's, and
	// a mistyped one must not be created.
	if err := os.Mkdir(jobDir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("launcher: recording global exit: %w", err)
	}
	tmp, err := os.CreateTemp(jobDir, globalExitFile+".*")
	if err != nil {
		return fmt.Errorf("launcher: recording global exit: %w", err)
	}
	_, werr := fmt.Fprintf(tmp, "%d %d\n", pe, status)
	// The contents reach the disk before the name that publishes them.
	serr := tmp.Sync()
	cerr := tmp.Close()
	if werr != nil || serr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("launcher: recording global exit: %w", errors.Join(werr, serr, cerr))
	}
	// The first PE to call global_exit wins: link fails if the file exists.
	err = os.Link(tmp.Name(), filepath.Join(jobDir, globalExitFile))
	os.Remove(tmp.Name())
	if err != nil && !os.IsExist(err) {
		return fmt.Errorf("launcher: recording global exit: %w", err)
	}
	// The name itself must outlive a crash of this host's PEs, which
	// follows at once: the caller exits next.
	if err := syncDir(jobDir); err != nil {
		return fmt.Errorf("launcher: recording global exit: %w", err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// ReadGlobalExit returns the PE and status recorded in jobDir by
// WriteGlobalExit, if any. A PE whose peer vanished reads it to tell a
// peer that left because of a global exit from one that failed.
func ReadGlobalExit(jobDir string) (pe, status int, ok bool) {
	b, err := os.ReadFile(filepath.Join(jobDir, globalExitFile))
	if err != nil {
		return 0, 0, false
	}
	return parseGlobalExit(b)
}

// parseGlobalExit decodes the file WriteGlobalExit writes: "pe status\n".
func parseGlobalExit(b []byte) (pe, status int, ok bool) {
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0, false
	}
	pe, err1 := strconv.Atoi(f[0])
	status, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || pe < 0 {
		return 0, 0, false
	}
	return pe, status, true
}
