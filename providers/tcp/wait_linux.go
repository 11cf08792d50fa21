package tcp

import (
	"syscall"
	"time"
)

// waitRaw sleeps in the kernel until the socket is readable or s.waitNs
// nanoseconds have passed, and sets s.waitOK to whether it can say so: a
// socket numbered beyond what select takes, or select's failure, leaves
// it false. It is a method value made once, so that a wait allocates
// nothing.
func (s *sockReader) waitRaw(fd uintptr) {
	var fs syscall.FdSet
	per := 1024 / len(fs.Bits)
	if int(fd) >= per*len(fs.Bits) {
		return
	}
	fs.Bits[int(fd)/per] |= 1 << (int(fd) % per)
	tv := syscall.NsecToTimeval(max(s.waitNs, int64(time.Microsecond)))
	for {
		_, err := syscall.Select(int(fd)+1, &fs, nil, nil, &tv)
		if err == syscall.EINTR {
			continue
		}
		s.waitOK = err == nil
		return
	}
}

// canWait says whether waitRaw can wait on this system.
const canWait = true
