package ntbring

import "github.com/goshmem/goshmem/core"

// setupLink is a protocol's half of one link at start-up: its inbound
// windows, and the neighbour's once the hello has been checked.
type setupLink interface {
	setInbound() error
	mapOutbound() error
}

// setupLinks is the start-up both protocols share: set the inbound
// windows, bring the links up, write the hello into the neighbours'
// scratchpads; once every host has, check the neighbours' hellos and map
// their windows. Each of the two steps ends in core.Agree, so all hosts
// fail together; the caller starts its goroutines once it returns nil.
func setupLinks[L setupLink](d *domain, ports *ringPorts, s settings, links []L, hello, checkHello func(L) error) error {
	var err error
	for _, l := range links {
		if err == nil {
			err = l.setInbound()
		}
	}
	if err == nil {
		err = enableLinks(ports, s.timeout)
	}
	for _, l := range links {
		if err == nil {
			err = hello(l)
		}
	}
	if err := core.Agree(d.boot, err); err != nil {
		return err
	}
	for _, l := range links {
		if err == nil {
			err = checkHello(l)
		}
		if err == nil {
			err = l.mapOutbound()
		}
	}
	return core.Agree(d.boot, err)
}
