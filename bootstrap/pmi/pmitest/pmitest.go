// Package pmitest is a launcher's PMI server for tests: the PMI-1 wire
// protocol of MPICH's Hydra and the PMI-2 wire protocol of Slurm's
// srun --mpi=pmi2, as much of them as a goshmem PE speaks, with one
// key-value space and a fence that answers everyone once all the job's
// processes have entered it. It speaks the bytes itself, independently of
// package pmi, so a test of the client does not check the client against
// its own parser.
package pmitest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
)

// JobID is the PMI_JOBID a PMI-2 client must name in its fullinit, as
// Slurm demands of the job it set in that variable.
const JobID = "77.0"

// KVSName is the PMI-1 key-value space's name.
const KVSName = "kvs_42_0"

// Server serves the n processes of one job.
type Server struct {
	n int
	// Mapping is the job attribute PMI_process_mapping, as Slurm and
	// Hydra describe where the ranks run ("(vector,(0,1,4))": from node
	// 0, one node of four ranks); empty, the server has none.
	Mapping string

	mu      sync.Mutex
	kvs     map[string]string
	waiting []func() // answers of the processes inside the fence
	errs    []error
	asked   map[string]int // job attributes asked for, and how often
}

// NewServer returns a server for a job of n processes.
func NewServer(n int) *Server {
	return &Server{n: n, kvs: map[string]string{}, asked: map[string]int{}}
}

// Errs returns what clients sent that is not the protocol.
func (s *Server) Errs() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.errs...)
}

// Asked reports how many times a client asked for the job attribute key.
func (s *Server) Asked(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked[key]
}

// Value returns what a client put under key.
func (s *Server) Value(key string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.kvs[key]
	return v, ok
}

func (s *Server) fail(format string, args ...any) {
	s.mu.Lock()
	s.errs = append(s.errs, fmt.Errorf(format, args...))
	s.mu.Unlock()
}

// fence counts a process in; the last one in releases all.
func (s *Server) fence(answer func()) {
	s.mu.Lock()
	s.waiting = append(s.waiting, answer)
	var release []func()
	if len(s.waiting) == s.n {
		release, s.waiting = s.waiting, nil
	}
	s.mu.Unlock()
	for _, f := range release {
		f()
	}
}

func (s *Server) put(k, v string) {
	s.mu.Lock()
	s.kvs[k] = v
	s.mu.Unlock()
}

// attr answers a job attribute: PMI_process_mapping, or nothing.
func (s *Server) attr(k string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked[k]++
	if k == "PMI_process_mapping" && s.Mapping != "" {
		return s.Mapping, true
	}
	return "", false
}

// Serve answers the process of the given rank on conn until it
// finalizes or the connection ends, then closes conn.
func (s *Server) Serve(conn net.Conn, rank int) {
	defer conn.Close()
	r := bufio.NewReader(conn)
	var wmu sync.Mutex
	write := func(b string) {
		wmu.Lock()
		defer wmu.Unlock()
		conn.Write([]byte(b))
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return
	}
	m := fields1(line)
	if m["cmd"] != "init" {
		s.fail("first message %q, want cmd=init", line)
		return
	}
	version := m["pmi_version"]
	write(fmt.Sprintf("cmd=response_to_init pmi_version=%s pmi_subversion=0 rc=0\n", version))
	if version == "2" {
		s.serve2(r, write, rank)
		return
	}
	s.serve1(r, write)
}

func (s *Server) serve1(r *bufio.Reader, write func(string)) {
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		m := fields1(line)
		switch m["cmd"] {
		case "get_my_kvsname":
			write("cmd=my_kvsname kvsname=" + KVSName + " rc=0\n")
		case "put":
			s.put(m["key"], m["value"])
			write("cmd=put_result rc=0 msg=success\n")
		case "barrier_in":
			s.fence(func() { write("cmd=barrier_out\n") })
		case "get":
			// Hydra answers the job attributes from the key-value space.
			v, ok := s.Value(m["key"])
			if !ok {
				v, ok = s.attr(m["key"])
			}
			if ok {
				write("cmd=get_result rc=0 msg=success value=" + v + "\n")
			} else {
				write("cmd=get_result rc=-1 msg=key " + m["key"] + " not found\n")
			}
		case "finalize":
			write("cmd=finalize_ack\n")
			return
		default:
			s.fail("unexpected PMI-1 command %q", line)
			return
		}
	}
}

func (s *Server) serve2(r *bufio.Reader, write func(string), rank int) {
	reply := func(kv ...string) { write(encode2(kv...)) }
	for {
		m, err := read2(r)
		if err != nil {
			if err != io.EOF {
				s.fail("PMI-2: %v", err)
			}
			return
		}
		switch m["cmd"] {
		case "fullinit":
			if m["pmijobid"] != JobID {
				reply("cmd", "fullinit-response", "rc", "3")
				continue
			}
			reply("cmd", "fullinit-response", "rc", "0", "pmi-version", "2", "pmi-subversion", "0",
				"rank", strconv.Itoa(rank), "size", strconv.Itoa(s.n), "appnum", "0", "debugged", "FALSE", "pmiverbose", "FALSE")
		case "job-getid":
			reply("cmd", "job-getid-response", "rc", "0", "jobid", JobID)
		case "info-getjobattr":
			// As Slurm's pmi2 plugin answers it.
			if v, ok := s.attr(m["key"]); ok {
				reply("cmd", "info-getjobattr-response", "rc", "0", "found", "TRUE", "value", v)
			} else {
				reply("cmd", "info-getjobattr-response", "rc", "0", "found", "FALSE")
			}
		case "kvs-put":
			s.put(m["key"], m["value"])
			reply("cmd", "kvs-put-response", "rc", "0")
		case "kvs-fence":
			s.fence(func() { reply("cmd", "kvs-fence-response", "rc", "0") })
		case "kvs-get":
			if v, ok := s.Value(m["key"]); ok {
				reply("cmd", "kvs-get-response", "rc", "0", "found", "TRUE", "value", v)
			} else {
				reply("cmd", "kvs-get-response", "rc", "0", "found", "FALSE")
			}
		case "finalize":
			reply("cmd", "finalize-response", "rc", "0")
			return
		default:
			s.fail("unexpected PMI-2 command %q", m["cmd"])
			return
		}
	}
}

// fields1 splits a PMI-1 line into its key=value words.
func fields1(line string) map[string]string {
	m := map[string]string{}
	for _, w := range strings.Fields(line) {
		if k, v, ok := strings.Cut(w, "="); ok {
			m[k] = v
		}
	}
	return m
}

// encode2 frames a PMI-2 message: a six-character length, then
// "key=value;" pairs with a ';' inside one doubled.
func encode2(kv ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		b.WriteString(strings.ReplaceAll(kv[i], ";", ";;") + "=" + strings.ReplaceAll(kv[i+1], ";", ";;") + ";")
	}
	return fmt.Sprintf("%-6d", b.Len()) + b.String()
}

// read2 reads one PMI-2 message into its fields.
func read2(r io.Reader) (map[string]string, error) {
	var hdr [6]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(hdr[:])))
	if err != nil || n < 0 || n > 64<<10 {
		return nil, fmt.Errorf("length header %q", hdr[:])
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	m := map[string]string{}
	var f strings.Builder
	flush := func() {
		if k, v, ok := strings.Cut(f.String(), "="); ok {
			m[k] = v
		}
		f.Reset()
	}
	for i := 0; i < len(body); i++ {
		switch {
		case body[i] == ';' && i+1 < len(body) && body[i+1] == ';':
			f.WriteByte(';')
			i++
		case body[i] == ';':
			flush()
		default:
			f.WriteByte(body[i])
		}
	}
	flush()
	return m, nil
}
