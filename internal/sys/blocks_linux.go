package sys

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// MappedBlocks is how much of its file system the file mapped at addr
// takes: the blocks stat counts of the file behind the mapping that holds
// addr, found through /proc/self/map_files. A file system that commits on
// touch counts only what was committed. Where this process may not see
// the file behind a mapping, the error wraps ErrMappingHidden.
func MappedBlocks(addr uintptr) (int64, error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return -1, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		span, _, _ := strings.Cut(sc.Text(), " ")
		var lo, hi uintptr
		if _, err := fmt.Sscanf(span, "%x-%x", &lo, &hi); err != nil || addr < lo || addr >= hi {
			continue
		}
		st, err := os.Stat("/proc/self/map_files/" + span)
		if err != nil {
			return -1, fmt.Errorf("%w: %w", ErrMappingHidden, err)
		}
		return st.Sys().(*syscall.Stat_t).Blocks * 512, nil
	}
	if err := sc.Err(); err != nil {
		return -1, err
	}
	return -1, fmt.Errorf("no mapping holds %#x", addr)
}

// ErrMappingHidden says that the file behind a mapping is not to be seen
// here (/proc/self/map_files needs privileges some containers lack).
var ErrMappingHidden = errors.New("the file behind the mapping is not to be seen")
