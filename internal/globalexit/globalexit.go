// Package globalexit is the record by which a PE that calls global_exit
// tells its launcher so: a file in the job's directory (core.JobDir). The
// PE side (shmem) writes it and reads it, the launcher reads it; keeping
// the format here lets both use it without shmem depending on a launcher.
//
// The record is one file, "global-exit", holding "<pe> <status>\n". It
// appears whole or not at all, and the first PE to write it wins: a
// launcher, seeing any PE exit while it exists, ends the whole job with
// that PE's status, even 0, so a PE that leaves because it saw the exit
// is never blamed for leaving.
package globalexit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// File is the record's name in the job directory.
const File = "global-exit"

// Write records, in the job directory jobDir, that PE pe called
// global_exit(status). The file appears whole or not at all, and is on
// disk when Write returns: a caller tells the other PEs of its exit only
// then, so the launcher can find the record whenever a PE leaves because
// it saw the exit. A record already there is kept: the first caller wins.
func Write(jobDir string, pe, status int) error {
	if pe < 0 {
		return fmt.Errorf("globalexit: recording global exit: PE %d: a PE is 0 or more", pe)
	}
	// The job directory only: the directory above it is the user's, and
	// a mistyped one must not be created.
	if err := os.Mkdir(jobDir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("globalexit: recording global exit: %w", err)
	}
	tmp, err := os.CreateTemp(jobDir, File+".*")
	if err != nil {
		return fmt.Errorf("globalexit: recording global exit: %w", err)
	}
	_, werr := tmp.Write(Format(pe, status))
	// The contents reach the disk before the name that publishes them.
	serr := tmp.Sync()
	cerr := tmp.Close()
	if werr != nil || serr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("globalexit: recording global exit: %w", errors.Join(werr, serr, cerr))
	}
	// The first PE to call global_exit wins: link fails if the file exists.
	err = os.Link(tmp.Name(), filepath.Join(jobDir, File))
	os.Remove(tmp.Name())
	if err != nil && !os.IsExist(err) {
		return fmt.Errorf("globalexit: recording global exit: %w", err)
	}
	// The name itself must outlive a crash of this host's PEs, which
	// follows at once: the caller exits next.
	if err := syncDir(jobDir); err != nil {
		return fmt.Errorf("globalexit: recording global exit: %w", err)
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

// Read returns the PE and status recorded in jobDir by Write, if any. A
// PE whose peer vanished reads it to tell a peer that left because of a
// global exit from one that failed; a launcher reads it when a PE exits.
// A missing or malformed record is no record (ok false).
func Read(jobDir string) (pe, status int, ok bool) {
	b, err := os.ReadFile(filepath.Join(jobDir, File))
	if err != nil {
		return 0, 0, false
	}
	return Parse(b)
}

// Format is the record's contents for PE pe and status.
func Format(pe, status int) []byte { return fmt.Appendf(nil, "%d %d\n", pe, status) }

// Parse decodes a record: "pe status", white space around either ignored,
// pe 0 or more. Anything else is not a record (ok false).
func Parse(b []byte) (pe, status int, ok bool) {
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
