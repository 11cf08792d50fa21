// Package netif answers what the settings that name a network interface
// need to know of it: the address to listen or dial from, and, for an
// error naming a wrong one, the interfaces this host has.
package netif

import (
	"fmt"
	"net"
	"strings"
)

// Addr is the first IPv4 address of the interface name, else its first
// IPv6 address that is not link-local; an error if it does not exist, is
// down or has neither.
func Addr(name string) (net.IP, error) {
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return nil, err
	}
	if ifc.Flags&net.FlagUp == 0 {
		return nil, fmt.Errorf("interface %s is down", name)
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return nil, err
	}
	var v6 net.IP
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if n.IP.To4() != nil {
				return n.IP, nil
			}
			if v6 == nil && !n.IP.IsLinkLocalUnicast() {
				v6 = n.IP
			}
		}
	}
	if v6 == nil {
		return nil, fmt.Errorf("interface %s has no usable address", name)
	}
	return v6, nil
}

// Names lists this host's interfaces for a message, "none" if there are
// none or they cannot be listed.
func Names() string {
	ifs, err := net.Interfaces()
	if err != nil || len(ifs) == 0 {
		return "none"
	}
	names := make([]string, len(ifs))
	for i, f := range ifs {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}
