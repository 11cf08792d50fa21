package tcp

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// recorder keeps what is written to a connection.
type recorder struct {
	net.Conn
	sent bytes.Buffer
}

func (r *recorder) Write(p []byte) (int, error) {
	r.sent.Write(p)
	return r.Conn.Write(p)
}

// closedByPeer checks that the PE ends c: a read gets EOF or a reset,
// not the test's deadline.
func closedByPeer(t *testing.T, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Minute)))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the PE left a stranger's connection open: %v", err)
}

// Strangers connect to PE 0's port: with garbage, with nothing at all,
// with a well-formed hello and the wrong secret, with a replay of a real
// dialer's handshake, and with the right secret for a PE that is already
// connected. None of them is welcomed or can read or write memory; the
// PE logs each refusal, and the job carries on.
func TestStranger(t *testing.T) {
	doms, logs := openJob(t, 2, map[string]string{paramTimeout.Env: "1s"})
	regs := newRegions(t, doms, 4096)
	for _, r := range regs {
		copy(r.mem, bytes.Repeat([]byte("heap"), 1024))
	}
	want := bytes.Clone(regs[0].mem)
	d := doms[0]
	addr := d.ln.Addr().String()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	claim := hello{size: 2, from: 1, to: 0, domain: d.id}
	deadline := func() time.Time { return time.Now().Add(10 * time.Second) }

	t.Run("garbage", func(t *testing.T) {
		c := dial()
		junk := make([]byte, 4096)
		_, _ = rand.Read(junk)
		_, _ = c.Write(junk)
		closedByPeer(t, c)
	})
	t.Run("silent", func(t *testing.T) {
		closedByPeer(t, dial()) // after the 1s handshake timeout
	})
	t.Run("a put frame instead of a hello", func(t *testing.T) {
		c := dial()
		_, _ = c.Write(frame(header{op: opPut, region: 0, off: 0, arg: 8}, []byte("stranger")))
		closedByPeer(t, c)
	})
	t.Run("wrong secret", func(t *testing.T) {
		c := dial()
		err := dialHandshake(c, []byte("not the job secret"), claim, deadline())
		require.ErrorIs(t, err, errHandshake)
		require.ErrorContains(t, err, "cannot prove the job secret")
	})
	t.Run("replay", func(t *testing.T) {
		// Record a handshake with the secret: refused as a duplicate, but
		// its hello and proof were valid for that challenge.
		rec := &recorder{Conn: dial()}
		err := dialHandshake(rec, testSecret, claim, deadline())
		require.ErrorContains(t, err, "did not welcome")
		sent := rec.sent.Bytes()
		require.Len(t, sent, helloLen+macLen)
		// Replay it on a new connection: the challenge differs, so the
		// recorded proof does not answer it.
		c := dial()
		_, err = c.Write(sent[:helloLen])
		require.NoError(t, err)
		ch := make([]byte, challengeLen)
		_, err = io.ReadFull(c, ch)
		require.NoError(t, err)
		_, err = c.Write(sent[helloLen:])
		require.NoError(t, err)
		var w [1]byte
		_, err = io.ReadFull(c, w[:])
		require.Error(t, err, "a replayed handshake was welcomed")
	})
	t.Run("hello for another domain", func(t *testing.T) {
		c := dial()
		other := claim
		other.domain++
		err := dialHandshake(c, testSecret, other, deadline())
		require.ErrorIs(t, err, errHandshake)
	})

	require.Eventually(t, func() bool {
		l := logs.String()
		return strings.Contains(l, "not a goshmem tcp peer") && strings.Contains(l, "wrong proof") &&
			strings.Contains(l, "is connected already") && strings.Contains(l, "in domain")
	}, 10*time.Second, 10*time.Millisecond, "refusals logged:\n%s", logs)

	require.Equal(t, want, regs[0].mem, "a stranger changed PE 0's memory")
	require.Equal(t, 1, d.nconns)
	// The job works on.
	each(doms, func(d *domain) {
		ep, err := d.NewEndpoint(core.EndpointOptions{})
		if !assert.NoError(t, err) {
			return
		}
		peer := 1 - d.rank
		assert.NoError(t, ep.Put(peer, regs[d.rank], 0, []byte{byte(d.rank + 1)}))
		v, err := ep.FetchAtomic(peer, regs[d.rank], 8, core.AtomicAdd, core.Uint64, 1, 0)
		assert.NoError(t, err)
		assert.NotZero(t, v)
		assert.NoError(t, ep.Quiet())
	})
	require.Equal(t, byte(2), regs[0].mem[0])
	require.Equal(t, byte(1), regs[1].mem[0])
}
