// Package globalexit is the record by which a PE that calls global_exit
// tells its launcher so: a file in the job's directory (core.JobDir). The
// PE side (shmem) writes it and reads it, the launcher reads it; keeping
// the format here lets both use it without shmem depending on a launcher.
//
// The record is one file, "global-exit", holding "<pe> <status>\n" and,
// when the library rather than the program ended the job (an error in a
// routine that cannot return one), a second line saying why, so that the
// launcher repeats it instead of blaming a call to global_exit nobody
// made. It appears whole or not at all, and the first PE to write it wins: a
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
func Write(jobDir string, pe, status int) error { return WriteReason(jobDir, pe, status, "") }

// MaxReason bounds the reason a record keeps, in bytes.
const MaxReason = 1024

// WriteReason is Write for a job the library ends on an error: reason
// says why (one line; longer ones are cut to MaxReason bytes), and the
// launcher reports it instead of a call to global_exit.
func WriteReason(jobDir string, pe, status int, reason string) error {
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
	_, werr := tmp.Write(FormatReason(pe, status, reason))
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
	r, ok := ReadRecord(jobDir)
	return r.PE, r.Status, ok
}

// Record is what a global exit recorded.
type Record struct {
	PE, Status int
	// Reason is why the library ended the job, or "" for the program's
	// own call of global_exit.
	Reason string
}

// ReadRecord is Read with the reason.
func ReadRecord(jobDir string) (Record, bool) {
	b, err := os.ReadFile(filepath.Join(jobDir, File))
	if err != nil {
		return Record{}, false
	}
	return ParseRecord(b)
}

// Format is the record's contents for PE pe and status.
func Format(pe, status int) []byte { return FormatReason(pe, status, "") }

// FormatReason is Format with the reason, if any, as a second line.
func FormatReason(pe, status int, reason string) []byte {
	b := fmt.Appendf(nil, "%d %d\n", pe, status)
	if reason = CleanReason(reason); reason != "" {
		b = append(append(b, reason...), '\n')
	}
	return b
}

// CleanReason is reason as a record keeps it: one line, its white space
// runs made single spaces, at most MaxReason bytes (cut at a character).
func CleanReason(reason string) string {
	reason = strings.Join(strings.Fields(reason), " ")
	if len(reason) > MaxReason {
		reason = strings.ToValidUTF8(reason[:MaxReason], "")
	}
	return reason
}

// Parse decodes a record: "pe status", white space around either ignored,
// pe 0 or more, then perhaps a line of reason. Anything else is not a
// record (ok false).
func Parse(b []byte) (pe, status int, ok bool) {
	r, ok := ParseRecord(b)
	return r.PE, r.Status, ok
}

// ParseRecord is Parse with the reason.
func ParseRecord(b []byte) (Record, bool) {
	first, rest, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(first)
	if len(f) != 2 {
		return Record{}, false
	}
	pe, err1 := strconv.Atoi(f[0])
	status, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || pe < 0 {
		return Record{}, false
	}
	return Record{PE: pe, Status: status, Reason: CleanReason(rest)}, true
}
