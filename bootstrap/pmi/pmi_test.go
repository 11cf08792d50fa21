package pmi

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap/pmi/pmitest"
)

func envOf(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}

// runJob starts n clients against one fake server; PE 0 puts a value, all
// fence and read it back.
func runJob(t *testing.T, n int, env func(rank int) map[string]string, wantVersion int) {
	srv := pmitest.NewServer(n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	got := make([]string, n)
	for rank := range n {
		a, b := net.Pipe()
		wg.Add(2)
		go func() { defer wg.Done(); srv.Serve(b, rank) }()
		go func() {
			defer wg.Done()
			c := &Client{conn: a, timeout: 10 * time.Second, rank: -1, size: -1, origin: "test"}
			c, err := c.start(envOf(env(rank)))
			if err != nil {
				errs[rank] = err
				a.Close()
				return
			}
			if c.Rank() != rank || c.Size() != n || c.Version() != wantVersion {
				errs[rank] = fmt.Errorf("rank %d size %d version %d", c.Rank(), c.Size(), c.Version())
			}
			if rank == 0 {
				if err := c.Put("goshmem-store", "node01:4242"); err != nil {
					errs[rank] = err
				}
			}
			if err := c.Fence(); err != nil {
				errs[rank] = err
				c.Close()
				return
			}
			got[rank], errs[rank] = c.Get("goshmem-store")
			if _, err := c.Get("absent"); err == nil {
				errs[rank] = fmt.Errorf("Get of an absent key succeeded")
			}
			if err := c.Finalize(); err != nil && errs[rank] == nil {
				errs[rank] = err
			}
		}()
	}
	wg.Wait()
	require.Empty(t, srv.Errs())
	for rank := range n {
		require.NoError(t, errs[rank], "rank %d", rank)
		require.Equal(t, "node01:4242", got[rank], "rank %d", rank)
	}
}

func TestPMI1(t *testing.T) {
	runJob(t, 3, func(rank int) map[string]string {
		return map[string]string{EnvFD: "9", EnvRank: strconv.Itoa(rank), EnvSize: "3"}
	}, 1)
}

func TestPMI2(t *testing.T) {
	runJob(t, 3, func(rank int) map[string]string {
		return map[string]string{EnvFD: "9", EnvJobID: pmitest.JobID, EnvRank: strconv.Itoa(rank), EnvSize: "3"}
	}, 2)
}

// A process whose peers never reach the fence gives up after the timeout.
func TestFenceTimeout(t *testing.T) {
	srv := pmitest.NewServer(2)
	a, b := net.Pipe()
	go srv.Serve(b, 0)
	c := &Client{conn: a, timeout: 200 * time.Millisecond, rank: -1, size: -1, origin: "PMI_FD=9"}
	c, err := c.start(envOf(map[string]string{EnvFD: "9", EnvRank: "0", EnvSize: "2"}))
	require.NoError(t, err)
	start := time.Now()
	err = c.Fence()
	require.Error(t, err)
	require.Contains(t, err.Error(), "did not answer within")
	require.Contains(t, err.Error(), "PMI_FD=9")
	require.Less(t, time.Since(start), 5*time.Second)
	c.Close()
}

// A server that answers the wrong command is named, not trusted.
func TestWrongAnswer(t *testing.T) {
	a, b := net.Pipe()
	go func() {
		r := bufio.NewReader(b)
		readLine1(r)
		b.Write([]byte("cmd=barrier_out\n"))
		b.Close()
	}()
	c := &Client{conn: a, timeout: 5 * time.Second, rank: -1, size: -1, origin: "test"}
	_, err := c.start(envOf(map[string]string{EnvFD: "9", EnvRank: "0", EnvSize: "1"}))
	require.ErrorIs(t, err, errWire)
}

func TestPMI1RejectsSpaces(t *testing.T) {
	c := &Client{version: 1}
	require.Error(t, c.Put("k", "a b"))
}

func TestParse(t *testing.T) {
	m, err := parse1("cmd=get_result rc=-1 msg=key x not found")
	require.NoError(t, err)
	require.Equal(t, "key x not found", m["msg"])
	m, err = parse2([]byte("cmd=kvs-get-response;rc=0;value=a;;b;"))
	require.NoError(t, err)
	require.Equal(t, "a;b", m["value"])
	body, err := read2(strings.NewReader(string(encode2("cmd", "x", "v", "1;2"))))
	require.NoError(t, err)
	m, err = parse2(body)
	require.NoError(t, err)
	require.Equal(t, "1;2", m["v"])
	_, err = read2(strings.NewReader("abcdefxyz"))
	require.ErrorIs(t, err, errWire)
	_, err = parse1("rc=0")
	require.ErrorIs(t, err, errWire)
}

func FuzzParse1(f *testing.F) {
	f.Add("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n")
	f.Add("cmd=get_result rc=-1 msg=key not found\n")
	f.Add("junk")
	f.Fuzz(func(t *testing.T, s string) {
		line, err := readLine1(bufio.NewReaderSize(strings.NewReader(s), 16))
		if err != nil {
			return
		}
		m, err := parse1(line)
		if err == nil && m["cmd"] == "" {
			t.Fatalf("parsed %q without a cmd", line)
		}
	})
}

func FuzzParse2(f *testing.F) {
	f.Add([]byte(encode2("cmd", "kvs-get-response", "rc", "0", "found", "TRUE", "value", "a;b")))
	f.Add([]byte("5     cmd=x"))
	f.Add([]byte("99999999"))
	f.Fuzz(func(t *testing.T, b []byte) {
		body, err := read2(strings.NewReader(string(b)))
		if err != nil {
			return
		}
		if len(body) > maxLine {
			t.Fatalf("a body of %d bytes", len(body))
		}
		m, err := parse2(body)
		if err != nil {
			return
		}
		// What parses re-encodes to what parses to the same fields.
		kv := []string{}
		for k, v := range m {
			kv = append(kv, k, v)
		}
		again, err := read2(strings.NewReader(string(encode2(kv...))))
		require.NoError(t, err)
		m2, err := parse2(again)
		require.NoError(t, err)
		require.Equal(t, m, m2)
	})
}

func TestMappingNodes(t *testing.T) {
	for v, want := range map[string]int{
		"(vector,(0,1,4))":          1,
		"(vector, (0,1,4))":         1,
		"(vector,(0,2,4))":          2,
		"(vector,(0,4,1))":          4,
		"(vector,(0,2,3),(2,1,1))":  3,
		"(vector,(0,1,2),(0,1,2))":  1,
		"(vector,(1,1,2),(0,1,2))":  2,
		"(vector,(0,1,1000000000))": 1,
	} {
		n, ok := MappingNodes(v)
		require.True(t, ok, v)
		require.Equal(t, want, n, v)
	}
	for _, v := range []string{"", "(vector,)", "(vector)", "(vector,(0,1))", "(vector,(0,0,4))", "(vector,(0,1,4)",
		"(vector,(-1,1,4))", "(list,(0,1,4))", "(vector,(0,1,x))", "(vector,(0,1,4)junk)"} {
		_, ok := MappingNodes(v)
		require.False(t, ok, v)
	}
}

// JobAttr asks for a job attribute as each protocol does: PMI-2's
// info-getjobattr, PMI-1's get from the key-value space.
func TestJobAttr(t *testing.T) {
	for _, version := range []int{1, 2} {
		for _, mapping := range []string{"(vector,(0,1,2))", ""} {
			srv := pmitest.NewServer(1)
			srv.Mapping = mapping
			a, b := net.Pipe()
			go srv.Serve(b, 0)
			env := map[string]string{EnvFD: "9", EnvRank: "0", EnvSize: "1"}
			if version == 2 {
				env[EnvJobID] = pmitest.JobID
			}
			c := &Client{conn: a, timeout: 10 * time.Second, rank: -1, size: -1, origin: "test"}
			c, err := c.start(envOf(env))
			require.NoError(t, err)
			v, found, err := c.JobAttr(MappingKey)
			require.NoError(t, err)
			require.Equal(t, mapping != "", found, "PMI-%d", version)
			require.Equal(t, mapping, v, "PMI-%d", version)
			require.NoError(t, c.Finalize())
			require.Empty(t, srv.Errs())
		}
	}
}
