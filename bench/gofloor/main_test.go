//go:build linux

package main

import (
	"bytes"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPingPong bounces messages between two goroutines of this process
// over a loopback connection: both sides move every message whole, to
// the end, and the round trip is measured.
func TestPingPong(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	const size, iters = 100, 200
	done := make(chan error, 1)
	go func() { done <- echoSide(ln.Addr().String(), size, warmup+iters) }()
	c, err := ln.Accept()
	require.NoError(t, err)
	defer c.Close()
	rtt, err := pingPong(c, size, iters)
	require.NoError(t, err)
	require.NoError(t, <-done)
	require.Positive(t, rtt)
}

// TestEchoGone: a peer that closes early ends the measurement with an
// error instead of a poll that never ends.
func TestEchoGone(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() { _ = echoSide(ln.Addr().String(), 8, 10) }()
	c, err := ln.Accept()
	require.NoError(t, err)
	defer c.Close()
	_, err = pingPong(c, 8, 100)
	require.Error(t, err)
}

func TestReport(t *testing.T) {
	var b bytes.Buffer
	report(&b, 8, 11500, true)
	require.Equal(t, `{"test":"rtt","provider":"go-floor(poll)","npes":2,"size":8,"latency_us":11.5000}`+"\n", b.String())
	b.Reset()
	report(&b, 8, 11500, false)
	require.True(t, strings.HasPrefix(b.String(), "go-floor(poll): 8-byte round trip 11.50 us"))
}
