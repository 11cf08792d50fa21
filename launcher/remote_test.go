package launcher

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeRsh makes an rsh command that runs the command on this host, as
// ssh would on the named one, with SSH_CONNECTION saying the launcher is
// at 127.0.0.1; it logs every command line it is given to the returned
// file. hosts it refuses fail as ssh does when a host is unreachable.
func fakeRsh(t *testing.T, refuse ...string) (rsh, argvLog string) {
	t.Helper()
	dir := t.TempDir()
	argvLog = filepath.Join(dir, "argv")
	var cases strings.Builder
	for _, h := range refuse {
		fmt.Fprintf(&cases, "%s) echo \"ssh: connect to host %s port 22: Connection refused\" >&2; exit 255;;\n", h, h)
	}
	script := fmt.Sprintf(`#!/bin/sh
echo "$@" >> %q
host=$1
shift
case "$host" in
%sesac
SSH_CONNECTION="127.0.0.1 40000 127.0.0.1 22" exec "$@"
`, argvLog, cases.String())
	rsh = filepath.Join(dir, "fakersh")
	require.NoError(t, os.WriteFile(rsh, []byte(script), 0o755))
	t.Setenv(EnvRsh, rsh)
	return rsh, argvLog
}

// onHosts runs a job's PEs on the given hosts; names other than
// "localhost" are reached through fakeRsh and run the test binary's agent.
func onHosts(hosts string) func(*Options) {
	return func(o *Options) {
		h, err := ParseHosts(hosts)
		if err != nil {
			panic(err)
		}
		o.Hosts = h
		o.LaunchAgent = []string{"env", roleEnv + "=agent", "GORACE=atexit_sleep_ms=0", os.Args[0]}
	}
}

func TestRemoteHostsRunTheJob(t *testing.T) {
	_, argv := fakeRsh(t)
	var secret string
	r := launch(t, context.Background(), 0, "bootstrap", nil, onHosts("localhost:1,nodea:2,nodeb:1"), func(o *Options) {
		o.Tag = true
		o.Verbose = true
	})
	require.NoError(t, r.err)
	require.Equal(t, 0, r.code, r.stderr)
	for pe := range 4 {
		require.Contains(t, r.stdout, fmt.Sprintf("[pe %d] PE %d of 4: job ", pe, pe))
	}
	require.Len(t, r.pids, 4, "every PE's pid is reported, remote ones through their agents")
	require.Contains(t, r.stderr, "PEs [1 2] on nodea")
	require.Contains(t, r.stderr, "PEs [3] on nodeb")

	// The secret reaches the agents on their input, never their command
	// lines, which every user of a host can read.
	b, err := os.ReadFile(argv)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 2, "one rsh command per other host")
	for _, l := range lines {
		require.True(t, strings.HasSuffix(l, " "+AgentFlag), "agent command line %q", l)
		require.NotContains(t, l, "SECRET")
	}
	_ = secret
}

func TestRemotePEFailureEndsTheJob(t *testing.T) {
	fakeRsh(t)
	// PE 2 (on nodea) exits 7; the others hang until the job ends them.
	r := launch(t, context.Background(), 0, "exit", []string{"0", "0", "7", "0"}, onHosts("localhost:2,nodea:2"))
	require.Equal(t, 7, r.code, r.stderr)
	require.Regexp(t, `PE 2 \(pid \d+ on nodea\) exited with status 7`, r.stderr)
}

func TestUnreachableHostEndsTheJob(t *testing.T) {
	fakeRsh(t, "nodeb")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := launch(t, ctx, 0, "bootstrap", nil, onHosts("localhost:1,nodea:1,nodeb:1"))
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "nodeb")
	require.Contains(t, r.stderr, "Connection refused", "what ssh said is in the message")
	require.Less(t, r.took, 30*time.Second)
}

func TestCancelEndsRemotePEs(t *testing.T) {
	fakeRsh(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const np = 3
	var ready syncBuffer
	r := launch(t, ctx, np, "hang", []string{"ignoreterm"}, onHosts("localhost:1,nodea:2"), func(o *Options) {
		o.Grace = 300 * time.Millisecond
		o.Stdout = writerFunc(func(p []byte) (int, error) {
			ready.Write(p)
			if strings.Count(ready.String(), "ready\n") == np {
				cancel()
			}
			return len(p), nil
		})
	})
	require.Equal(t, ExitInterrupted, r.code)
	require.Len(t, r.pids, np)
	for _, pid := range r.pids {
		require.True(t, gone(pid), "PE pid %d outlived the job", pid)
	}
}

func TestAgentRefusesBadJobs(t *testing.T) {
	good := agentSpec{Proto: agentProto, JobID: "j", Size: 2, Ranks: []int{1}, Program: "/bin/true",
		StorePort: 5, Secret: hex.EncodeToString(make([]byte, 16))}
	require.NoError(t, good.check())
	for name, edit := range map[string]func(*agentSpec){
		"proto":        func(s *agentSpec) { s.Proto = 99 },
		"size":         func(s *agentSpec) { s.Size = 0 },
		"rank range":   func(s *agentSpec) { s.Ranks = []int{2} },
		"rank twice":   func(s *agentSpec) { s.Ranks = []int{1, 1} },
		"no ranks":     func(s *agentSpec) { s.Ranks = nil },
		"relative":     func(s *agentSpec) { s.Program = "true" },
		"port":         func(s *agentSpec) { s.StorePort = 70000 },
		"env no equal": func(s *agentSpec) { s.Env = []string{"FOO"} },
		"binding":      func(s *agentSpec) { s.CPUBind = "socket" },
	} {
		s := good
		edit(&s)
		require.Error(t, s.check(), name)
	}
	// Input that is not a job description ends the agent with a message.
	var out, errw syncBuffer
	code := RunAgent(context.Background(), strings.NewReader("not json\n"), &out, &errw)
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errw.String(), "job description")
	code = RunAgent(context.Background(), strings.NewReader(`{"Proto":1`), &out, &errw)
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errw.String(), "input ended")
}

func TestRemoteJobRefusesALoopbackStore(t *testing.T) {
	fakeRsh(t)
	r := launch(t, context.Background(), 0, "bootstrap", nil, onHosts("localhost:1,nodea:1"), func(o *Options) {
		o.Bind = "127.0.0.1:0"
	})
	require.Equal(t, ExitUsage, r.code)
	require.ErrorContains(t, r.err, "which PEs on other hosts cannot reach")
	require.Empty(t, r.pids)
}

// A PE on another host that calls global_exit ends the job with its
// status, even 0, and is named as the cause; the others are ended.
func TestRemoteGlobalExit(t *testing.T) {
	fakeRsh(t)
	for _, status := range []string{"0", "3"} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		r := launch(t, ctx, 0, "globalexit", []string{"2", status}, onHosts("localhost:1,nodea:2"))
		cancel()
		want := 3
		if status == "0" {
			want = 0
		}
		require.Equal(t, want, r.code, r.stderr)
		require.Contains(t, r.stderr, "PE 2 called global_exit("+status+")")
	}
}

// The library's exit on another host carries its reason to the launcher.
func TestRemoteLibraryExit(t *testing.T) {
	fakeRsh(t)
	const why = "the goshmem library failed in shmem_free: shmem: free: not a block"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := launch(t, ctx, 0, "globalexit", []string{"2", "1", why}, onHosts("localhost:1,nodea:2"))
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, "PE 2 ended the job with status 1: "+why)
	require.NotContains(t, r.stderr, "global_exit")
}
