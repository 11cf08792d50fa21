// Package pmi is a client of the process-management interface launchers
// offer their processes: the PMI-1 wire protocol of MPICH's Hydra (mpiexec)
// and the PMI-2 wire protocol of Slurm's srun --mpi=pmi2, both on the
// socket the launcher hands down in PMI_FD (or at PMI_PORT). It speaks
// the bytes itself, so a PE needs no PMI library.
//
// The bootstrap uses it for rank and size and to publish, through the
// launcher's key-value space (seen only by the job's processes), the
// address and secret of the store PE 0 serves.
package pmi

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/goshmem/goshmem/core"
)

// The variables launchers set for a PMI client.
const (
	EnvFD    = "PMI_FD"    // an inherited socket to the launcher
	EnvPort  = "PMI_PORT"  // host:port of the launcher, when there is no PMI_FD
	EnvID    = "PMI_ID"    // this process's id on PMI_PORT
	EnvRank  = "PMI_RANK"  // this process's rank
	EnvSize  = "PMI_SIZE"  // the number of processes
	EnvJobID = "PMI_JOBID" // set by Slurm's pmi2 plugin: the PMI-2 server
)

// Present reports whether the launcher offers PMI.
func Present(lookup func(string) (string, bool)) bool {
	for _, k := range []string{EnvFD, EnvPort} {
		if v, ok := lookup(k); ok && strings.TrimSpace(v) != "" {
			return true
		}
	}
	return false
}

// Client is one process's connection to its launcher's PMI server. It is
// not safe for concurrent use.
type Client struct {
	conn    net.Conn
	r       *bufio.Reader
	version int // 1 or 2
	kvs     string
	rank    int
	size    int
	timeout time.Duration
	origin  string // where the connection came from, for errors
}

// Rank is this process's rank as the launcher numbers it.
func (c *Client) Rank() int { return c.rank }

// Size is the number of processes in the job.
func (c *Client) Size() int { return c.size }

// Version is the protocol spoken: 1 or 2.
func (c *Client) Version() int { return c.version }

// Open connects to the launcher named by the environment and initializes
// PMI: PMI-2 when the launcher is Slurm's pmi2 plugin (it sets PMI_JOBID),
// PMI-1 otherwise, which Hydra and Slurm both serve. timeout bounds every
// exchange, the fence included.
func Open(lookup func(string) (string, bool), timeout time.Duration) (*Client, error) {
	get := func(k string) (string, bool) {
		v, ok := lookup(k)
		v = strings.TrimSpace(v)
		return v, ok && v != ""
	}
	c := &Client{timeout: timeout, rank: -1, size: -1}
	if v, ok := get(EnvFD); ok {
		fd, err := strconv.Atoi(v)
		if err != nil || fd < 0 {
			return nil, &core.EnvError{Var: EnvFD, Value: v, Allowed: "a file descriptor number, set by the launcher"}
		}
		f := os.NewFile(uintptr(fd), EnvFD)
		conn, err := net.FileConn(f)
		// FileConn holds its own copy; the launcher's descriptor is
		// closed so that it is not handed on to children.
		f.Close()
		if err != nil {
			return nil, &core.EnvError{Var: EnvFD, Value: v, Allowed: "a socket to the launcher's PMI server (" + err.Error() + ")"}
		}
		c.conn, c.origin = conn, EnvFD+"="+v
	} else if v, ok := get(EnvPort); ok {
		conn, err := net.DialTimeout("tcp", v, timeout)
		if err != nil {
			return nil, &core.EnvError{Var: EnvPort, Value: v, Allowed: "host:port of the launcher's PMI server (" + err.Error() + ")"}
		}
		c.conn, c.origin = conn, EnvPort+"="+v
	} else {
		return nil, fmt.Errorf("pmi: neither %s nor %s is set: %w", EnvFD, EnvPort, core.ErrInvalid)
	}
	return c.start(get)
}

// start initializes PMI on c.conn; on failure the connection is closed.
func (c *Client) start(get func(string) (string, bool)) (*Client, error) {
	c.r = bufio.NewReaderSize(c.conn, 4096)
	if err := c.init(get); err != nil {
		c.conn.Close()
		return nil, err
	}
	return c, nil
}

func (c *Client) init(get func(string) (string, bool)) error {
	envInt := func(k string) (int, bool, error) {
		v, ok := get(k)
		if !ok {
			return 0, false, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, false, &core.EnvError{Var: k, Value: v, Allowed: "a non-negative integer, set by the launcher"}
		}
		return n, true, nil
	}
	if rank, ok, err := envInt(EnvRank); err != nil {
		return err
	} else if ok {
		c.rank = rank
	}
	if size, ok, err := envInt(EnvSize); err != nil {
		return err
	} else if ok {
		c.size = size
	}
	if strings.HasPrefix(c.origin, EnvPort) {
		if err := c.initack(get); err != nil {
			return err
		}
	}
	_, slurm := get(EnvJobID)
	c.version = 1
	if slurm {
		c.version = 2
	}
	m, err := c.call1(fmt.Sprintf("cmd=init pmi_version=%d pmi_subversion=%d", c.version, 2-c.version), "response_to_init")
	if err != nil {
		return err
	}
	if v := m["pmi_version"]; v != "" && v != strconv.Itoa(c.version) {
		return c.fail(fmt.Errorf("asked for PMI-%d, the server answered version %q: %w", c.version, v, core.ErrNotSupported))
	}
	if c.version == 2 {
		return c.fullinit(get)
	}
	m, err = c.call1("cmd=get_my_kvsname", "my_kvsname")
	if err != nil {
		return err
	}
	c.kvs = m["kvsname"]
	if c.kvs == "" {
		return c.fail(fmt.Errorf("%w: my_kvsname without a kvsname", errWire))
	}
	if c.rank < 0 || c.size < 1 || c.rank >= c.size {
		return c.fail(fmt.Errorf("the launcher set no valid %s and %s (rank %d of %d): %w", EnvRank, EnvSize, c.rank, c.size, core.ErrInvalid))
	}
	return nil
}

// initack is how a process that dialled PMI_PORT says who it is; the
// server answers with its rank and size.
func (c *Client) initack(get func(string) (string, bool)) error {
	id, ok := get(EnvID)
	if !ok {
		return &core.EnvError{Var: EnvID, Unset: true, Allowed: "this process's PMI id, set by the launcher with " + EnvPort}
	}
	if _, err := c.call1("cmd=initack pmiid="+id, "initack"); err != nil {
		return err
	}
	for range 3 {
		m, err := c.recv1()
		if err != nil {
			return err
		}
		if m["cmd"] != "set" {
			return c.fail(fmt.Errorf("%w: %q after initack, want set", errWire, m["cmd"]))
		}
		for k, dst := range map[string]*int{"rank": &c.rank, "size": &c.size} {
			if v, ok := m[k]; ok {
				n, err := strconv.Atoi(v)
				if err != nil {
					return c.fail(fmt.Errorf("%w: set %s=%q", errWire, k, v))
				}
				*dst = n
			}
		}
	}
	return nil
}

func (c *Client) fullinit(get func(string) (string, bool)) error {
	kv := []string{"cmd", "fullinit"}
	// Slurm refuses a fullinit that does not name the job it set in
	// PMI_JOBID.
	if id, ok := get(EnvJobID); ok {
		kv = append(kv, "pmijobid", id)
	}
	if c.rank >= 0 {
		kv = append(kv, "pmirank", strconv.Itoa(c.rank))
	}
	kv = append(kv, "threaded", "FALSE")
	m, err := c.call2("fullinit-response", kv...)
	if err != nil {
		return err
	}
	rank, err1 := strconv.Atoi(m["rank"])
	size, err2 := strconv.Atoi(m["size"])
	if err1 != nil || err2 != nil || size < 1 || rank < 0 || rank >= size {
		return c.fail(fmt.Errorf("%w: fullinit-response rank %q size %q", errWire, m["rank"], m["size"]))
	}
	c.rank, c.size = rank, size
	if m, err = c.call2("job-getid-response", "cmd", "job-getid"); err != nil {
		return err
	}
	c.kvs = m["jobid"]
	return nil
}

// Put publishes key=value in the job's key-value space; others see it
// after the next Fence.
func (c *Client) Put(key, value string) error {
	if c.version == 2 {
		_, err := c.call2("kvs-put-response", "cmd", "kvs-put", "key", key, "value", value)
		return err
	}
	if strings.ContainsAny(key+value, " \n=") {
		return fmt.Errorf("pmi: put %q: PMI-1 keys and values hold no spaces, newlines or '=': %w", key, core.ErrInvalid)
	}
	_, err := c.call1(fmt.Sprintf("cmd=put kvsname=%s key=%s value=%s", c.kvs, key, value), "put_result")
	return err
}

// Fence waits until every process has reached it, making every Put before
// it visible. It fails after the timeout naming the launcher's socket:
// some process never came.
func (c *Client) Fence() error {
	if c.version == 2 {
		_, err := c.call2("kvs-fence-response", "cmd", "kvs-fence")
		return err
	}
	_, err := c.call1("cmd=barrier_in", "barrier_out")
	return err
}

// Get returns the value another process Put before the last Fence.
func (c *Client) Get(key string) (string, error) {
	if c.version == 2 {
		m, err := c.call2("kvs-get-response", "cmd", "kvs-get", "jobid", c.kvs, "srcid", "-1", "key", key)
		if err != nil {
			return "", err
		}
		if m["found"] != "TRUE" {
			return "", fmt.Errorf("pmi: key %q is not in the job's key-value space: %w", key, core.ErrInvalid)
		}
		return m["value"], nil
	}
	m, err := c.call1(fmt.Sprintf("cmd=get kvsname=%s key=%s", c.kvs, key), "get_result")
	if err != nil {
		if errors.Is(err, errRC) {
			return "", fmt.Errorf("pmi: key %q is not in the job's key-value space (%v): %w", key, err, core.ErrInvalid)
		}
		return "", err
	}
	return m["value"], nil
}

// JobAttr returns the launcher's job attribute key, such as
// PMI_process_mapping, and whether the launcher has it: PMI-2's
// info-getjobattr; under PMI-1, Hydra keeps them in the key-value space.
func (c *Client) JobAttr(key string) (string, bool, error) {
	if c.version == 2 {
		m, err := c.call2("info-getjobattr-response", "cmd", "info-getjobattr", "key", key)
		if err != nil {
			return "", false, err
		}
		return m["value"], m["found"] == "TRUE", nil
	}
	v, err := c.Get(key)
	if errors.Is(err, core.ErrInvalid) {
		return "", false, nil // not found
	}
	return v, err == nil, err
}

// MappingKey is the job attribute that says where the ranks run.
const MappingKey = "PMI_process_mapping"

// MappingNodes returns how many nodes a PMI_process_mapping value names:
// "(vector,(0,1,4))" is one node of four ranks, "(vector,(0,2,4))" two
// of four each, "(vector,(0,4,1))" ranks dealt round four nodes; each
// triple is a first node, a count of nodes and the ranks on each. ok is
// false for a value that is not of that form.
func MappingNodes(v string) (nodes int, ok bool) {
	v = strings.ReplaceAll(v, " ", "")
	body, found := strings.CutPrefix(v, "(vector,")
	if !found || !strings.HasSuffix(body, ")") {
		return 0, false
	}
	body = strings.TrimSuffix(body, ")")
	if body == "" {
		return 0, false
	}
	for body != "" {
		t, rest, found := strings.Cut(body, ")")
		t, isTriple := strings.CutPrefix(t, "(")
		if !found || !isTriple {
			return 0, false
		}
		f := strings.Split(t, ",")
		if len(f) != 3 {
			return 0, false
		}
		var n [3]int
		for i, s := range f {
			x, err := strconv.Atoi(s)
			if err != nil || x < 0 || x > 1<<30 {
				return 0, false
			}
			n[i] = x
		}
		if n[1] < 1 || n[2] < 1 {
			return 0, false
		}
		nodes = max(nodes, n[0]+n[1])
		body = strings.TrimPrefix(rest, ",")
	}
	return nodes, true
}

// Finalize tells the launcher this process is done with PMI and closes
// the connection. Hydra and Slurm count a process that exits without it
// as failed.
func (c *Client) Finalize() error {
	var err error
	if c.version == 2 {
		_, err = c.call2("finalize-response", "cmd", "finalize")
	} else {
		_, err = c.call1("cmd=finalize", "finalize_ack")
	}
	return errors.Join(err, c.conn.Close())
}

// Close drops the connection without finalizing.
func (c *Client) Close() error { return c.conn.Close() }

// errRC marks a server's refusal (rc other than 0).
var errRC = errors.New("pmi: the launcher refused")

func (c *Client) fail(err error) error {
	return fmt.Errorf("pmi (%s): %w", c.origin, err)
}

func (c *Client) deadline() { c.conn.SetDeadline(time.Now().Add(c.timeout)) }

func (c *Client) ioErr(what string, err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return c.fail(fmt.Errorf("%s: the launcher did not answer within %v (a fence waits for every process: did one never start?): %w",
			what, c.timeout, core.ErrTimeout))
	}
	return c.fail(fmt.Errorf("%s: %w", what, err))
}

func (c *Client) recv1() (map[string]string, error) {
	c.deadline()
	line, err := readLine1(c.r)
	if err != nil {
		return nil, c.ioErr("reading", err)
	}
	m, err := parse1(line)
	if err != nil {
		return nil, c.fail(err)
	}
	return m, nil
}

// call1 sends a PMI-1 command and reads its answer, which must be want.
func (c *Client) call1(cmd, want string) (map[string]string, error) {
	name, _, _ := strings.Cut(cmd, " ")
	c.deadline()
	if _, err := c.conn.Write([]byte(cmd + "\n")); err != nil {
		return nil, c.ioErr(name, err)
	}
	m, err := c.recv1()
	if err != nil {
		return nil, err
	}
	return m, c.check(name, want, m)
}

// call2 sends a PMI-2 command and reads its answer, which must be want.
func (c *Client) call2(want string, kv ...string) (map[string]string, error) {
	name := "cmd=" + kv[1]
	c.deadline()
	if _, err := c.conn.Write(encode2(kv...)); err != nil {
		return nil, c.ioErr(name, err)
	}
	body, err := read2(c.r)
	if err != nil {
		if errors.Is(err, errWire) {
			return nil, c.fail(err)
		}
		return nil, c.ioErr(name, err)
	}
	m, err := parse2(body)
	if err != nil {
		return nil, c.fail(err)
	}
	return m, c.check(name, want, m)
}

func (c *Client) check(name, want string, m map[string]string) error {
	if m["cmd"] != want {
		return c.fail(fmt.Errorf("%w: %s answered with cmd=%s, want %s", errWire, name, clip(m["cmd"]), want))
	}
	if rc, ok := m["rc"]; ok && rc != "0" {
		msg := m["msg"]
		if msg == "" {
			msg = m["errmsg"]
		}
		if msg != "" {
			msg = " (" + clip(msg) + ")"
		}
		return c.fail(fmt.Errorf("%s: rc=%s%s: %w", name, clip(rc), msg, errRC))
	}
	return nil
}
