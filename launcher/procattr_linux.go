package launcher

import "syscall"

func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		// Its own process group, so a terminal's Ctrl-C reaches only the
		// launcher, which ends the job in order, and so ending a PE ends
		// whatever it started too.
		Setpgid: true,
		// If the launcher dies, even by SIGKILL, its PEs do not outlive it.
		Pdeathsig: syscall.SIGKILL,
	}
}
