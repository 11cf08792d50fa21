//go:build linux

// Command gofloor is tcpfloor (bench/peer/tcpfloor.c) written in Go: the
// floor under any Go transport's round trip over TCP on this host. Two
// processes, each with one runtime processor as oshrun gives a PE on a
// host with a CPU per PE, bounce a message of -size bytes over one
// loopback TCP connection (Nagle off), each polling its socket with
// non-blocking read(2) and answering with write(2), both raw system calls
// (no runtime hooks around them: internal/sys, the calls the tcp provider
// polls with), in a loop that does nothing else.
//
// The distance between this and tcpfloor is what the Go runtime costs a
// round trip by itself, before any transport's work: bench/compare.sh tcp
// prints both.
//
//	go build -o bin/ ./bench/gofloor
//	bin/gofloor [-size N] [-iters N] [-json]
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"github.com/goshmem/goshmem/internal/sys"
)

// warmup is the number of untimed round trips before the timed ones.
const warmup = 1000

func main() {
	size := flag.Int("size", 8, "message size in bytes, 1 to 1M")
	iters := flag.Int("iters", 100000, "timed round trips")
	asJSON := flag.Bool("json", false, "one JSON line in shmemperf's schema instead of text")
	echo := flag.String("echo", "", "run as the echo side, connecting to this address (the measuring side starts it)")
	flag.Parse()
	if *size < 1 || *size > 1<<20 || *iters < 1 {
		fmt.Fprintln(os.Stderr, "gofloor: -size must be 1 to 1M bytes and -iters at least 1")
		os.Exit(2)
	}
	runtime.GOMAXPROCS(1)
	var err error
	if *echo != "" {
		err = echoSide(*echo, *size, warmup+*iters)
	} else {
		var rtt time.Duration
		if rtt, err = measure(*size, *iters); err == nil {
			report(os.Stdout, *size, rtt, *asJSON)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gofloor:", err)
		os.Exit(1)
	}
}

// report prints the mean round trip as text or as shmemperf's JSON line.
func report(w io.Writer, size int, rtt time.Duration, asJSON bool) {
	us := float64(rtt.Nanoseconds()) / 1e3
	if asJSON {
		fmt.Fprintf(w, "{\"test\":\"rtt\",\"provider\":\"go-floor(poll)\",\"npes\":2,\"size\":%d,\"latency_us\":%.4f}\n", size, us)
		return
	}
	fmt.Fprintf(w, "go-floor(poll): %d-byte round trip %.2f us\n", size, us)
}

// measure starts the echo side in a process of its own and returns the
// mean of iters round trips after the warm-up.
func measure(size, iters int) (time.Duration, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(self, "-echo", ln.Addr().String(), "-size", fmt.Sprint(size), "-iters", fmt.Sprint(iters))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	c, err := ln.Accept()
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return 0, err
	}
	rtt, err := pingPong(c, size, iters)
	_ = c.Close()
	if werr := cmd.Wait(); err == nil && werr != nil {
		err = fmt.Errorf("the echo process: %w", werr)
	}
	return rtt, err
}

// echoSide connects to addr and answers total messages of size bytes.
func echoSide(addr string, size, total int) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, size)
	return onSocket(c, func(fd uintptr) error {
		for range total {
			if err := recvAll(fd, buf); err != nil {
				return err
			}
			if err := sendAll(fd, buf); err != nil {
				return err
			}
		}
		return nil
	})
}

// pingPong sends and receives warmup and then iters messages on c and
// returns the mean of the timed round trips.
func pingPong(c net.Conn, size, iters int) (rtt time.Duration, err error) {
	buf := make([]byte, size)
	var start time.Time
	err = onSocket(c, func(fd uintptr) error {
		for i := range warmup + iters {
			if i == warmup {
				start = time.Now()
			}
			if err := sendAll(fd, buf); err != nil {
				return err
			}
			if err := recvAll(fd, buf); err != nil {
				return err
			}
		}
		rtt = time.Since(start)
		return nil
	})
	return rtt / time.Duration(iters), err
}

// onSocket runs f on c's descriptor, which the net package keeps
// non-blocking.
func onSocket(c net.Conn, f func(fd uintptr) error) error {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return errors.New("not a socket")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := raw.Control(func(fd uintptr) { ferr = f(fd) }); err != nil {
		return err
	}
	return ferr
}

// recvAll polls fd until it has read len(b) bytes.
func recvAll(fd uintptr, b []byte) error { return moveAll(fd, b, sys.ReadNoWait, "read") }

// sendAll writes b to fd, polling while the socket is full.
func sendAll(fd uintptr, b []byte) error { return moveAll(fd, b, sys.WriteNoWait, "write") }

// moveAll calls call, a read or a write that never waits, until it has
// moved all of b, looking again while fd has nothing to give or no room;
// a read that finds the stream ended is an error.
func moveAll(fd uintptr, b []byte, call func(uintptr, []byte) (int, error), name string) error {
	for done := 0; done < len(b); {
		n, err := call(fd, b[done:])
		switch {
		case err == syscall.EAGAIN || err == syscall.EINTR:
		case err != nil:
			return os.NewSyscallError(name, err)
		case n == 0:
			return fmt.Errorf("%s: %w", name, io.ErrUnexpectedEOF)
		default:
			done += n
		}
	}
	return nil
}
