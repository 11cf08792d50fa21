package tcp

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/netif"
)

// The provider's parameters, read from GOSHMEM_TCP_<NAME>.
var (
	paramAddr = core.NewParam(Name, "ADDR", "",
		`address this PE listens on: "host:port", "host" or ":port"; empty: every interface, a free port`)
	paramIface = core.NewParam(Name, "IFACE", "",
		"network interface to listen on, when ADDR names no host (its first IPv4 address, else IPv6)")
	paramTimeout = core.NewParam(Name, "TIMEOUT", "5s",
		"a peer whose host stops answering is lost after about this long (keepalive and unacknowledged data)").WithKind(core.KindDuration)
	paramConnect = core.NewParam(Name, "CONNECT_TIMEOUT", "30s",
		"how long opening the job waits for every connection between PEs").WithKind(core.KindDuration)
	paramBuffer = core.NewParam(Name, "BUFFER", "256K",
		"bytes of small operations combined per connection before the issuing PE writes them itself").WithKind(core.KindSize)
	paramSockBuf = core.NewParam(Name, "SOCKBUF", "0",
		"kernel send and receive buffer of each connection; 0 leaves it to the kernel's autotuning").WithKind(core.KindSize)
	paramFlushIdle = core.NewParam(Name, "FLUSH_IDLE", "0",
		"how long a connection's writer waits for more small operations before writing a partly filled buffer; 0: write at once").WithKind(core.KindDuration)
	paramPoll = core.NewParam(Name, "POLL", "50us",
		"longest a connection's reader polls its socket before it sleeps (it adapts below this); 0: never poll").WithKind(core.KindDuration)
	paramPollStall = core.NewParam(Name, "POLL_STALL", "25",
		"percent of the time some thread of the host waits for a CPU (its CPU pressure) from which polls yield the CPU at every look; 100: never, 0: always").WithKind(core.KindInt)
	paramSocket = core.NewParam(Name, "SOCKET", socketAuto,
		`who watches a connection's socket: own (epoll sets of the connection's own, in the Go runtime's poller, that hold it only while a goroutine sleeps on it, so that segments that come while it is polled run no epoll callback; Linux), runtime (the Go runtime's poller, always) or auto (own where readers poll: POLL is not 0 and the host's PEs fit its CPUs, in Go programs)`).
		WithChoices(socketAuto, socketOwn, socketRuntime)
)

// The values of GOSHMEM_TCP_SOCKET.
const (
	socketAuto    = "auto"
	socketOwn     = "own"
	socketRuntime = "runtime"
)

var params = []core.Param{paramAddr, paramIface, paramTimeout, paramConnect, paramBuffer, paramSockBuf, paramFlushIdle, paramPoll, paramPollStall, paramSocket}

// settings are the parameters as one PE read them.
type settings struct {
	listen    string // host:port for net.Listen
	timeout   time.Duration
	connect   time.Duration
	buffer    int
	sockBuf   int
	flushIdle time.Duration
	poll      time.Duration
	pollStall int    // percent, cpuroom.go
	cpus      int    // the CPUs the job's PEs on this host share
	socket    string // GOSHMEM_TCP_SOCKET: socketAuto, socketOwn or socketRuntime
	// ownSocket says that connections take their sockets out of the
	// runtime's poller (sock); chooseSocket sets it.
	ownSocket bool
}

// minTimeout and maxTimeout bound TIMEOUT and CONNECT_TIMEOUT: below a
// tenth of a second a busy but healthy peer counts as lost, and above an
// hour a lost one is waited for as good as forever.
const (
	minTimeout = 100 * time.Millisecond
	maxTimeout = time.Hour
)

// readSettings reads the parameters; here is how many PEs of the job run
// on this host (hostPeers), of npes in all: where all do, they listen on
// the loopback address. The sockets' mode waits for the address exchange
// (chooseSocket).
func readSettings(cfg *core.Config, here, npes int) (settings, error) {
	var s settings
	var err error
	if s.listen, err = listenAddr(cfg, here == npes); err != nil {
		return s, err
	}
	if s.timeout, err = cfg.DurationIn(paramTimeout, minTimeout, maxTimeout); err != nil {
		return s, err
	}
	if s.connect, err = cfg.DurationIn(paramConnect, minTimeout, maxTimeout); err != nil {
		return s, err
	}
	buf, err := paramBuffer.Size(cfg.Lookup, 4<<10, 1<<30)
	if err != nil {
		return s, err
	}
	s.buffer = int(buf)
	sb, err := paramSockBuf.Size(cfg.Lookup, 0, 1<<30)
	if err != nil {
		return s, err
	}
	s.sockBuf = int(sb)
	if s.flushIdle, err = cfg.DurationIn(paramFlushIdle, 0, time.Second); err != nil {
		return s, err
	}
	if s.poll, err = cfg.DurationIn(paramPoll, 0, maxPoll); err != nil {
		return s, err
	}
	if s.pollStall, err = cfg.Int(paramPollStall, 0, 100); err != nil {
		return s, err
	}
	if s.cpus, err = cfg.CPUs(); err != nil {
		return s, err
	}
	if s.socket, err = cfg.Choice(paramSocket); err != nil {
		return s, err
	}
	return s, nil
}

// chooseSocket sets ownSocket from SOCKET, given the PEs of the job that
// share this machine's CPUs (sharing, this one included; sharingCPUs) and
// whether the callers are locked to their threads. Under auto, sockets
// leave the runtime's poller only where readers poll: where nobody polls,
// the reader sleeps after every frame and the socket would stay in a set
// of its own, one level of epoll deeper than the runtime's. A C program's
// callers (locked to their threads) wait through the reader goroutine
// and the ack's poll(2), and measured slower with it.
func (s *settings) chooseSocket(sharing int, locked bool) {
	switch s.socket {
	case socketOwn:
		s.ownSocket = true
	case socketAuto:
		s.ownSocket = s.poll > 0 && sharing <= s.cpus && !locked
	default:
		s.ownSocket = false
	}
}

// sharingCPUs counts the PEs that share this PE's CPUs, this one
// included: those that advertised the same addresses, apart from the
// port (addrs, from the exchange; self is this PE's rank). PEs of one
// machine and network namespace advertise one list, whatever host id
// they were given: tests give PEs of one machine ids of different hosts,
// whose PEs still share the CPUs. PEs in namespaces of their own each
// have addresses of their own, and are counted apart, as containers'
// are; GOSHMEM_CPUS tells such PEs what they share.
func sharingCPUs(addrs [][]string, self int) int {
	key := func(list []string) string {
		hosts := make([]string, 0, len(list))
		for _, a := range list {
			h, _, _ := net.SplitHostPort(a)
			hosts = append(hosts, h)
		}
		slices.Sort(hosts)
		return strings.Join(hosts, ",")
	}
	mine, n := key(addrs[self]), 0
	for _, list := range addrs {
		if key(list) == mine {
			n++
		}
	}
	return n
}

// hostPeers counts the PEs of the job on this host, this one included,
// in one network namespace: PEs in namespaces of their own (containers)
// each have a loopback device of their own, which the others cannot
// reach. It is collective.
func hostPeers(cfg *core.Config) (int, error) {
	host := cfg.HostID
	if host == "" {
		host = core.HostID(cfg.Lookup)
	}
	// Where namespaces exist, the link names this process's network
	// namespace; elsewhere there is one and the host id says it all.
	ns, _ := os.Readlink("/proc/self/ns/net")
	host += "\x00" + ns
	all, err := cfg.Bootstrap.Allgather([]byte(host))
	if err != nil {
		return 0, fmt.Errorf("exchange of host ids: %w", err)
	}
	n := 0
	for _, h := range all {
		if string(h) == host {
			n++
		}
	}
	return n, nil
}

// loopbackHost is where the PEs of a job on one host listen and dial
// when ADDR and IFACE name no host: the loopback device is faster than an
// external interface, and a port on it is out of other hosts' reach.
const loopbackHost = "127.0.0.1"

// listenAddr combines ADDR and IFACE into an address for net.Listen; a
// job on one host (oneHost) listens on the loopback address unless they
// name a host.
func listenAddr(cfg *core.Config, oneHost bool) (string, error) {
	addr := strings.TrimSpace(cfg.Value(paramAddr))
	host, port := addr, "0"
	if addr != "" {
		if h, p, err := net.SplitHostPort(addr); err == nil {
			host, port = h, p
		} else if strings.Count(addr, ":") == 1 {
			return "", &core.EnvError{Var: paramAddr.Env, Value: addr, Allowed: `"host:port", "host", ":port" or empty`}
		}
	}
	if ifname := strings.TrimSpace(cfg.Value(paramIface)); ifname != "" {
		if host != "" {
			return "", fmt.Errorf("%s=%q and %s=%q both choose the host to listen on; set one: %w",
				paramAddr.Env, addr, paramIface.Env, ifname, core.ErrInvalid)
		}
		ip, err := netif.Addr(ifname)
		if err != nil {
			return "", &core.EnvError{Var: paramIface.Env, Value: ifname,
				Allowed: fmt.Sprintf("the name of an up interface with an IP address (%v; this host has %s)", err, netif.Names())}
		}
		host = ip.String()
	}
	if host == "" && oneHost {
		host = loopbackHost
	}
	return net.JoinHostPort(host, port), nil
}

// advertised lists the addresses peers may dial to reach a listener on
// ln: its own address when it is bound to one, else every address of
// every up interface, loopback last (a peer on another host that dials it
// reaches its own loopback, where the handshake refuses whoever answers).
func advertised(ln net.Addr) []string {
	ta, ok := ln.(*net.TCPAddr)
	if !ok {
		return []string{ln.String()}
	}
	port := fmt.Sprint(ta.Port)
	if !ta.IP.IsUnspecified() {
		return []string{net.JoinHostPort(ta.IP.String(), port)}
	}
	var out, loop []string
	ifs, _ := net.Interfaces()
	for _, f := range ifs {
		if f.Flags&net.FlagUp == 0 {
			continue
		}
		addrs, _ := f.Addrs()
		for _, a := range addrs {
			n, ok := a.(*net.IPNet)
			if !ok || n.IP.IsLinkLocalUnicast() || n.IP.IsLinkLocalMulticast() {
				continue
			}
			s := net.JoinHostPort(n.IP.String(), port)
			if n.IP.IsLoopback() {
				loop = append(loop, s)
			} else {
				out = append(out, s)
			}
		}
	}
	if len(out)+len(loop) == 0 {
		return []string{net.JoinHostPort("127.0.0.1", port)}
	}
	return append(out, loop...)
}
