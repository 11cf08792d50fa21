package plugin

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// capture finds the file that holds the wrapped provider's part of a
// region when the provider moved the memory the plugin registered with it
// onto a file of its own: shared-memory providers such as loopback create
// that file in the job directory, map it, and remove its name once their
// peers have mapped it too, all inside RegisterRegion. So while a region
// is being made, before each collective the capture links every file of
// the job directory this process has mapped into a hold directory of its
// own (the name still exists then: the peers have not mapped it yet, so
// its owner has not removed it). When the call returns, the mapping that
// holds the region's local part names the file by inode; its link is
// handed to the PE, the others are removed.
//
// A provider whose local part is then neither the memory it was given nor
// a whole file of the job directory, mapped from offset 0 (anonymous
// memory, say), cannot be served: the call fails with
// core.ErrNotSupported.
type capture struct {
	dir  string // the job directory
	hold string // the hold directory, inside dir

	mu     sync.Mutex
	active bool
	links  map[uint64]string // inode → link in hold
}

func newCapture(dir string) *capture {
	return &capture{dir: dir, hold: filepath.Join(dir, fmt.Sprintf("plugin-hold-%d", os.Getpid())),
		links: map[uint64]string{}}
}

// begin starts capturing for one NewRegion.
func (c *capture) begin() {
	c.mu.Lock()
	c.active = true
	c.mu.Unlock()
}

// scan links the files of the job directory mapped here that have no
// link yet. Failures only mean a file is not captured; claim reports it.
func (c *capture) scan() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.active {
		return
	}
	data, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return
	}
	dir := c.dir // as the kernel spells it: without symbolic links
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	for _, m := range parseMaps(data) {
		if _, ok := c.links[m.inode]; ok || m.deleted || filepath.Dir(m.path) != dir ||
			strings.HasPrefix(filepath.Base(m.path), "plugin-") {
			continue
		}
		if err := os.MkdirAll(c.hold, 0o700); err != nil {
			return
		}
		link := filepath.Join(c.hold, strconv.FormatUint(m.inode, 10))
		if os.Link(m.path, link) == nil {
			c.links[m.inode] = link
		}
	}
}

// abort ends the capture of a NewRegion that failed.
func (c *capture) abort() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.active = false
	c.dropLocked()
}

// holdPath returns a path in the hold directory, creating the directory.
func (c *capture) holdPath(name string) (string, error) {
	return filepath.Join(c.hold, name), os.MkdirAll(c.hold, 0o700)
}

// claim ends the capture of one NewRegion: it returns the file holding
// local, renamed to a name of its own, and removes every other link. The
// caller (the PE) removes the returned name once it has mapped it.
func (c *capture) claim(local []byte, id uint32) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.active = false
	defer c.dropLocked()
	data, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return "", err
	}
	addr := uint64(mem.Addr(local))
	for _, m := range parseMaps(data) {
		if addr < m.start || addr >= m.end {
			continue
		}
		link, ok := c.links[m.inode]
		if m.start != addr || m.offset != 0 || m.inode == 0 || !ok {
			break
		}
		delete(c.links, m.inode)
		path := filepath.Join(c.hold, regionFile(id))
		if err := os.Rename(link, path); err != nil {
			return "", errors.Join(err, os.Remove(link))
		}
		return path, nil
	}
	return "", fmt.Errorf("the provider keeps this PE's part of the region in memory that is not a file of the job directory %s, which the PE cannot map: %w",
		c.dir, core.ErrNotSupported)
}

// inodeAt returns the inode of the file mapped at b's first byte.
func inodeAt(b []byte) (uint64, error) {
	data, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	addr := uint64(mem.Addr(b))
	for _, m := range parseMaps(data) {
		if addr >= m.start && addr < m.end && m.inode != 0 {
			return m.inode, nil
		}
	}
	return 0, fmt.Errorf("no file is mapped at %#x", addr)
}

// drop removes every link and the hold directory, when it is empty.
func (c *capture) drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked()
	os.Remove(c.hold)
}

func (c *capture) dropLocked() {
	for ino, link := range c.links {
		os.Remove(link)
		delete(c.links, ino)
	}
}

// mapping is one line of /proc/self/maps.
type mapping struct {
	start, end, offset, inode uint64
	path                      string
	deleted                   bool // the file's name was removed
}

// parseMaps reads /proc/<pid>/maps: "start-end perms offset dev inode
// path", numbers in hex but the inode in decimal, and " (deleted)" after
// the path of a file whose name was removed. Lines it cannot read are
// skipped.
func parseMaps(data []byte) []mapping {
	var out []mapping
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		off, err3 := strconv.ParseUint(f[2], 16, 64)
		ino, err4 := strconv.ParseUint(f[4], 10, 64)
		if !ok || errors.Join(err1, err2, err3, err4) != nil {
			continue
		}
		// The path is the rest of the line; it may hold spaces.
		path := strings.TrimSpace(sc.Text()[strings.Index(sc.Text(), f[5]):])
		path, deleted := strings.CutSuffix(path, " (deleted)")
		out = append(out, mapping{start: start, end: end, offset: off, inode: ino, path: path, deleted: deleted})
	}
	return out
}
