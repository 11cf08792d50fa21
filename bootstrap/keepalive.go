package bootstrap

import (
	"net"
	"time"

	"github.com/goshmem/goshmem/internal/sys"
)

// Liveness of store connections. A PE that exits, even by SIGKILL, has its
// socket closed by the kernel and is noticed at once. A host that dies or
// drops off the network sends nothing; keepalive probes find an idle
// connection dead after about keepIdle + keepCount*keepInterval, and the
// user timeout bounds how long data may stay unacknowledged (which
// suppresses keepalive) before the kernel gives up.
const (
	keepIdle     = 3 * time.Second
	keepInterval = time.Second
	keepCount    = 4
	userTimeout  = 10 * time.Second
)

var keepAlive = net.KeepAliveConfig{Enable: true, Idle: keepIdle, Interval: keepInterval, Count: keepCount}

// tuneConn turns on keepalive and the user timeout where c is TCP. Failure
// is not fatal: the connection still works, a dead host is only noticed
// later (and where the system has no user timeout, only by keepalive).
func tuneConn(c net.Conn) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return
	}
	_ = tc.SetKeepAliveConfig(keepAlive)
	_ = tc.SetNoDelay(true)
	if rc, err := tc.SyscallConn(); err == nil {
		_ = sys.SetTCPUserTimeout(rc, userTimeout)
	}
}
