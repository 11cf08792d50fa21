package bootstrap

import (
	"fmt"
	"net"
	"os"

	"github.com/goshmem/goshmem/bootstrap/pmi"
	"github.com/goshmem/goshmem/bootstrap/pmix"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/netif"
)

// EnvIface names the network interface PE 0's store listens on, under a
// launcher other than oshrun (whose store is its own, on the loopback
// address or where its hosts reach it).
const EnvIface = "GOSHMEM_BOOTSTRAP_IFACE"

// loopbackHost is where the store of a job on one node listens: out of
// other hosts' reach.
const loopbackHost = "127.0.0.1"

// storePlace is where PE 0's store listens and what address it publishes.
type storePlace struct {
	listen  string // host for net.Listen; "" is every interface
	publish string // host the other PEs dial
	why     string // how it was chosen, for SHMEM_DEBUG
}

// pmiStorePlace chooses where the store of a PMI job listens, from what
// the launcher says of where its PEs run. A store listens only where its
// PEs are:
//
//   - GOSHMEM_BOOTSTRAP_IFACE, when set: that interface's address;
//   - every PE on this node (PMI_process_mapping names one node): the
//     loopback address;
//   - else the address of this host that its name resolves to, which is
//     how the other nodes reached it when they dialled the name;
//   - else, where the name resolves to no address of this host but
//     loopback, every interface under the host's name, the one address
//     left that the others may reach.
func pmiStorePlace(iface string, c *pmi.Client) (storePlace, error) {
	if iface != "" {
		return ifacePlace(iface)
	}
	mapping, found, err := c.JobAttr(pmi.MappingKey)
	if err != nil {
		return storePlace{}, fmt.Errorf("bootstrap: PE 0 asking the launcher's PMI where the PEs run (%s): %w", pmi.MappingKey, err)
	}
	nodes, ok := pmi.MappingNodes(mapping)
	if found && ok && nodes == 1 {
		return storePlace{listen: loopbackHost, publish: loopbackHost,
			why: fmt.Sprintf("every PE on this node (%s=%s)", pmi.MappingKey, mapping)}, nil
	}
	why := "PMI names no process mapping"
	switch {
	case found && ok:
		why = fmt.Sprintf("the PEs run on %d nodes (%s=%s)", nodes, pmi.MappingKey, mapping)
	case found:
		why = fmt.Sprintf("PMI's %s=%q is of no known form", pmi.MappingKey, mapping)
	}
	return hostPlace(why)
}

// pmixStorePlace chooses where the store of a PMIx job listens, as
// pmiStorePlace does, from PMIx's ranks on this node (PMIX_LOCAL_PEERS):
// every rank of the job on PE 0's node puts it on the loopback address.
func pmixStorePlace(iface string, c *pmix.Client) (storePlace, error) {
	if iface != "" {
		return ifacePlace(iface)
	}
	peers, err := c.LocalPeers()
	if err == nil && len(peers) == c.Size() {
		return storePlace{listen: loopbackHost, publish: loopbackHost,
			why: fmt.Sprintf("every PE on this node (PMIx's local peers: %d of %d)", len(peers), c.Size())}, nil
	}
	why := fmt.Sprintf("PMIx names no ranks on this node (%v)", err)
	if err == nil {
		why = fmt.Sprintf("%d of the %d PEs on this node (PMIx's local peers)", len(peers), c.Size())
	}
	return hostPlace(why)
}

// hostPlace is the store of a job on several nodes, or whose launcher
// does not say: the address of this host its name resolves to, else every
// interface under the host's name.
func hostPlace(why string) (storePlace, error) {
	host, err := os.Hostname()
	if err != nil {
		return storePlace{}, fmt.Errorf("bootstrap: PE 0 cannot name its host for the store's address: %w", err)
	}
	if ip := hostAddr(host); ip != nil {
		return storePlace{listen: ip.String(), publish: ip.String(),
			why: why + "; the address of host " + host}, nil
	}
	return storePlace{publish: host,
		why: why + "; host " + host + " resolves to no address of this host but loopback: every interface (set " + EnvIface + " to choose one)"}, nil
}

// ifacePlace is the store on the address of the interface name.
func ifacePlace(name string) (storePlace, error) {
	ip, err := netif.Addr(name)
	if err != nil {
		return storePlace{}, &core.EnvError{Var: EnvIface, Value: name,
			Allowed: fmt.Sprintf("the name of an up network interface with an IP address, where PE 0's store listens (%v; this host has %s)", err, netif.Names())}
	}
	return storePlace{listen: ip.String(), publish: ip.String(), why: EnvIface + "=" + name}, nil
}

// addrStorePlace chooses where the store at addr (GOSHMEM_BOOTSTRAP, which
// the other PEs dial) listens: GOSHMEM_BOOTSTRAP_IFACE's address when set;
// addr's own host when it is an address of this host (a loopback address
// keeps the store out of other hosts' reach); else every interface, as a
// host name may resolve otherwise on the other PEs' nodes than here.
func addrStorePlace(iface, addr string) (storePlace, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return storePlace{}, &core.EnvError{Var: EnvBootstrap, Value: addr, Allowed: addrForms}
	}
	if iface != "" {
		p, err := ifacePlace(iface)
		p.publish = host
		return p, err
	}
	if ip := net.ParseIP(host); ip != nil && (ip.IsLoopback() || isLocal(ip)) {
		return storePlace{listen: host, publish: host, why: EnvBootstrap + " names an address of this host"}, nil
	}
	return storePlace{publish: host, why: EnvBootstrap + " names a host: every interface (set " + EnvIface + " to choose one)"}, nil
}

// hostAddr is the address of this host that host resolves to, IPv4
// first; nil if it resolves to none but loopback.
func hostAddr(host string) net.IP {
	ips, err := net.LookupIP(host)
	if err != nil {
		return nil
	}
	var v6 net.IP
	for _, ip := range ips {
		if ip.IsLoopback() || ip.IsLinkLocalUnicast() || !isLocal(ip) {
			continue
		}
		if ip.To4() != nil {
			return ip
		}
		if v6 == nil {
			v6 = ip
		}
	}
	return v6
}

// isLocal reports whether ip is an address of one of this host's up
// interfaces.
func isLocal(ip net.IP) bool {
	ifs, err := net.Interfaces()
	if err != nil {
		return false
	}
	for _, f := range ifs {
		if f.Flags&net.FlagUp == 0 {
			continue
		}
		addrs, _ := f.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return true
			}
		}
	}
	return false
}
