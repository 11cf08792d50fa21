package launcher

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/goshmem/goshmem/core"
)

// Host is a host a job may start PEs on, with how many it takes.
type Host struct {
	Name  string
	Slots int // at least 1
}

// maxSlots bounds a host's slot count as written by a user: far above
// any host's CPUs, far below what would make a placement table huge.
const maxSlots = 1 << 16

// ParseHosts reads Open MPI's --host syntax: a comma-separated list of
// names, each optionally followed by ":N" slots (1 when absent). A name
// listed twice adds its slots to the first mention.
func ParseHosts(s string) ([]Host, error) {
	var hosts []Host
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("host list %q has an empty entry; want NAME or NAME:SLOTS, comma-separated: %w", s, core.ErrInvalid)
		}
		name, slots, err := hostSlots(item)
		if err != nil {
			return nil, fmt.Errorf("host list %q: %w", s, err)
		}
		hosts = addHost(hosts, name, slots)
	}
	return hosts, nil
}

// hostSlots splits NAME[:SLOTS]. An IPv6 address is written in brackets
// ("[fd00::1]:2"), as in a URL, so its colons are not read as a count.
func hostSlots(item string) (string, int, error) {
	name, count := item, ""
	if strings.HasPrefix(item, "[") {
		end := strings.IndexByte(item, ']')
		if end < 0 {
			return "", 0, fmt.Errorf("%q: unclosed '[': %w", item, core.ErrInvalid)
		}
		name, count = item[1:end], strings.TrimPrefix(item[end+1:], ":")
		if count == "" && len(item) > end+1 {
			return "", 0, fmt.Errorf("%q: want [ADDR] or [ADDR]:SLOTS: %w", item, core.ErrInvalid)
		}
	} else if i := strings.LastIndexByte(item, ':'); i >= 0 {
		name, count = item[:i], item[i+1:]
		if strings.Contains(name, ":") {
			return "", 0, fmt.Errorf("%q: write an IPv6 address in brackets, [ADDR]:SLOTS: %w", item, core.ErrInvalid)
		}
		if count == "" {
			return "", 0, fmt.Errorf("%q: want NAME:SLOTS with a number after ':': %w", item, core.ErrInvalid)
		}
	}
	if err := checkHostName(name); err != nil {
		return "", 0, err
	}
	if count == "" {
		return name, 1, nil
	}
	n, err := strconv.Atoi(count)
	if err != nil || n < 1 || n > maxSlots {
		return "", 0, fmt.Errorf("host %s: slots %q is not a whole number from 1 to %d: %w", name, count, maxSlots, core.ErrInvalid)
	}
	return name, n, nil
}

// checkHostName refuses names that cannot be a host: empty, with spaces
// or shell metacharacters (a name reaches the remote shell command's
// arguments through the rsh command, never a shell here, but a name
// like "-oProxyCommand=..." would be read by ssh as an option).
func checkHostName(name string) error {
	if name == "" {
		return fmt.Errorf("empty host name: %w", core.ErrInvalid)
	}
	if name[0] == '-' {
		return fmt.Errorf("host name %q starts with '-': %w", name, core.ErrInvalid)
	}
	for _, c := range name {
		ok := c == '.' || c == '-' || c == '_' || c == ':' || c == '%' ||
			'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !ok {
			return fmt.Errorf("host name %q has %q; a host name has letters, digits, '.', '-', '_' (or is an address): %w", name, c, core.ErrInvalid)
		}
	}
	return nil
}

func addHost(hosts []Host, name string, slots int) []Host {
	for i := range hosts {
		if hosts[i].Name == name {
			hosts[i].Slots = min(hosts[i].Slots+slots, maxSlots)
			return hosts
		}
	}
	return append(hosts, Host{Name: name, Slots: slots})
}

// maxHostfile bounds what ReadHostfile reads.
const maxHostfile = 1 << 20

// ReadHostfile reads Open MPI's hostfile syntax: one host per line,
// "NAME" or "NAME slots=N" (also "NAME:N"), '#' starting a comment, blank
// lines ignored. Other keywords Open MPI knows (max_slots) are accepted
// and change nothing; unknown ones are refused.
func ReadHostfile(r io.Reader, file string) ([]Host, error) {
	var hosts []Host
	sc := bufio.NewScanner(io.LimitReader(r, maxHostfile))
	line := 0
	for sc.Scan() {
		line++
		text, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		where := fmt.Sprintf("%s:%d", file, line)
		name, slots, err := hostSlots(fields[0])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		for _, f := range fields[1:] {
			k, v, ok := strings.Cut(f, "=")
			switch {
			case ok && k == "slots":
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 || n > maxSlots {
					return nil, fmt.Errorf("%s: slots=%q is not a whole number from 1 to %d: %w", where, v, maxSlots, core.ErrInvalid)
				}
				slots = n
			case ok && k == "max_slots":
			default:
				return nil, fmt.Errorf("%s: %q: want NAME [slots=N]: %w", where, f, core.ErrInvalid)
			}
		}
		hosts = addHost(hosts, name, slots)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("%s names no host: %w", file, core.ErrInvalid)
	}
	return hosts, nil
}

// Place deals np PEs onto hosts by slot, as Open MPI does by default: the
// first host's slots get the first ranks, then the next host's. perHost,
// when positive, replaces every host's slot count (Open MPI's -N); np 0
// then means every slot. It returns the host of each rank.
func Place(hosts []Host, np, perHost int) ([]string, error) {
	if len(hosts) == 0 {
		return nil, fmt.Errorf("no hosts to place PEs on: %w", core.ErrInvalid)
	}
	total := 0
	for _, h := range hosts {
		s := h.Slots
		if perHost > 0 {
			s = perHost
		}
		total += s
	}
	if np == 0 {
		np = total
	}
	if np > total {
		return nil, fmt.Errorf("%d PEs asked for, but the hosts have %d slots (%s); list more hosts or slots: %w",
			np, total, describeHosts(hosts, perHost), core.ErrInvalid)
	}
	place := make([]string, 0, np)
	for _, h := range hosts {
		s := h.Slots
		if perHost > 0 {
			s = perHost
		}
		for i := 0; i < s && len(place) < np; i++ {
			place = append(place, h.Name)
		}
	}
	return place, nil
}

func describeHosts(hosts []Host, perHost int) string {
	parts := make([]string, len(hosts))
	for i, h := range hosts {
		s := h.Slots
		if perHost > 0 {
			s = perHost
		}
		parts[i] = h.Name + ":" + strconv.Itoa(s)
	}
	return strings.Join(parts, ",")
}

// isLocal says whether name is this host: "localhost", a loopback
// address, this host's name (or its first label), or an address of one of
// its interfaces. PEs there are started directly, without the rsh command.
func isLocal(name string) bool {
	if name == "localhost" {
		return true
	}
	if ip := net.ParseIP(name); ip != nil {
		if ip.IsLoopback() {
			return true
		}
		addrs, _ := net.InterfaceAddrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return true
			}
		}
		return false
	}
	h, err := os.Hostname()
	if err != nil {
		return false
	}
	short, _, _ := strings.Cut(h, ".")
	return strings.EqualFold(name, h) || strings.EqualFold(name, short)
}
