//go:build unix && !linux

package launcher

import "syscall"

// procAttr has no Pdeathsig outside Linux: PEs of a launcher killed
// outright are not ended by the kernel there.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
