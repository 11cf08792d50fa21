package auth

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var (
	secret = []byte("0123456789abcdef")
	hello  = []byte("the dialer's claims and its nonce")
)

// handshake runs both sides over hello with the secrets each knows and
// returns the errors each side ends with.
func handshake(t *testing.T, p Protocol, dialerSecret, acceptorSecret []byte) (dialer, acceptor error) {
	t.Helper()
	a, err := p.Accept(acceptorSecret, hello)
	require.NoError(t, err)
	ch, err := ParseChallenge(a.Challenge().Append(nil))
	require.NoError(t, err)
	proof, err := p.Answer(dialerSecret, hello, &ch)
	if err != nil {
		return err, nil // the dialer sends nothing more
	}
	got, err := ParseProof(proof[:])
	require.NoError(t, err)
	return nil, a.Verify(&got)
}

func TestHandshake(t *testing.T) {
	for _, p := range protocols {
		d, a := handshake(t, p, secret, secret)
		require.NoError(t, d)
		require.NoError(t, a)

		// An empty secret is a key like any other: both sides must agree.
		d, a = handshake(t, p, nil, nil)
		require.NoError(t, d)
		require.NoError(t, a)

		// Whoever lacks the secret is found out by the dialer, before it
		// proves anything itself.
		d, _ = handshake(t, p, []byte("another job's secret"), secret)
		require.ErrorIs(t, d, ErrUnproven)
		require.ErrorContains(t, d, "wrong proof from the acceptor")
		d, _ = handshake(t, p, secret, nil)
		require.ErrorIs(t, d, ErrUnproven)
	}
}

// A dialer that cannot compute the proof has nothing valid to send: not
// the acceptor's own proof sent back, not a proof over another HELLO or
// recorded on another connection, not a proof made for another protocol.
func TestForgedProofsAreRefused(t *testing.T) {
	a, err := TCP.Accept(secret, hello)
	require.NoError(t, err)
	ch := a.Challenge()

	reflected := ch.MAC
	require.ErrorIs(t, a.Verify(&reflected), ErrUnproven, "the acceptor's proof sent back")

	other, err := TCP.Answer(secret, hello, &ch)
	require.NoError(t, err)
	require.NoError(t, a.Verify(&other))

	// The same exchange replayed: a new connection draws a new nonce.
	again, err := TCP.Accept(secret, hello)
	require.NoError(t, err)
	require.NotEqual(t, ch.Nonce, again.Challenge().Nonce)
	require.ErrorIs(t, again.Verify(&other), ErrUnproven, "a replayed proof")

	// A proof for another HELLO (another rank, size or domain).
	otherHello := sum(secret, TCP.dialer, []byte("another membership"), &ch.Nonce)
	require.ErrorIs(t, a.Verify(&otherHello), ErrUnproven)

	// The bootstrap store's proofs are not the tcp provider's.
	b := Bootstrap.accept(secret, hello, ch.Nonce)
	bch := b.Challenge()
	_, err = TCP.Answer(secret, hello, &bch)
	require.ErrorIs(t, err, ErrUnproven)
	bproof, err := Bootstrap.Answer(secret, hello, &bch)
	require.NoError(t, err)
	require.ErrorIs(t, a.Verify(&bproof), ErrUnproven)
}

// Accept keeps its own copy of the HELLO: a caller reusing its buffer
// cannot change what the proof is checked against.
func TestAcceptCopiesHello(t *testing.T) {
	buf := append([]byte(nil), hello...)
	a, err := Bootstrap.Accept(secret, buf)
	require.NoError(t, err)
	ch := a.Challenge()
	proof, err := Bootstrap.Answer(secret, hello, &ch)
	require.NoError(t, err)
	copy(buf, "overwritten")
	require.NoError(t, a.Verify(&proof))
}

// No label is a prefix of another: HMAC(label || HELLO || nonce) can then
// never be the same input under two labels.
func TestLabelsArePrefixFree(t *testing.T) {
	var labels []string
	for _, p := range protocols {
		labels = append(labels, p.acceptor, p.dialer)
	}
	for i, a := range labels {
		require.NotEmpty(t, a)
		for j, b := range labels {
			if i != j {
				require.False(t, strings.HasPrefix(b, a), "label %q is a prefix of %q", a, b)
			}
		}
	}
}

// The proofs on the wire, pinned: the bootstrap store's over its HELLO
// payload (rank and size, big endian, then the member's nonce) and the
// tcp provider's over its whole HELLO. A change here breaks jobs whose
// PEs run different builds, and must come with a protocol version.
func TestKnownAnswers(t *testing.T) {
	var nd, na Nonce
	for i := range nd {
		nd[i], na[i] = byte(i), byte(32+i)
	}
	bhello := binary.BigEndian.AppendUint32(nil, 3)
	bhello = binary.BigEndian.AppendUint32(bhello, 8)
	bhello = append(bhello, nd[:]...)

	thello := []byte("goshmtcp")
	thello = binary.LittleEndian.AppendUint16(thello, 1)
	thello = binary.LittleEndian.AppendUint16(thello, 0)
	for _, v := range []uint32{4, 3, 1} {
		thello = binary.LittleEndian.AppendUint32(thello, v)
	}
	thello = binary.LittleEndian.AppendUint64(thello, 0x1122334455667788)
	thello = append(thello, nd[:]...)

	for _, tc := range []struct {
		p                Protocol
		hello            []byte
		acceptor, dialer string
	}{
		{Bootstrap, bhello,
			"e28c6977fb7bd51fb5dc2541220780c4945330b0041afdf1a77797782c4e11bf",
			"52ff5d82d26aeedaeb1ad23cb58ec70cb4691865be0755212ceeaf3f9a15486a"},
		{TCP, thello,
			"336ee5dc21cfdce45c8a75c97f12e1b8d777c2b7ea76bf9f18db3b714d8523a4",
			"370d7b999e87e22815c208bc5cce6b4e43e0355517a5c2878d7c2e89289e6dfb"},
	} {
		a := tc.p.accept(secret, tc.hello, na)
		ch := a.Challenge()
		require.Equal(t, tc.acceptor, hex.EncodeToString(ch.MAC[:]))
		proof, err := tc.p.Answer(secret, tc.hello, &ch)
		require.NoError(t, err)
		require.Equal(t, tc.dialer, hex.EncodeToString(proof[:]))
		require.NoError(t, a.Verify(&proof))
	}
}

func TestParseRejectsWrongLengths(t *testing.T) {
	for _, n := range []int{0, 1, ChallengeLen - 1, ChallengeLen + 1} {
		_, err := ParseChallenge(make([]byte, n))
		require.ErrorIs(t, err, ErrMalformed)
		require.ErrorContains(t, err, "want 64")
	}
	for _, n := range []int{0, ProofLen - 1, ProofLen + 1} {
		_, err := ParseProof(make([]byte, n))
		require.ErrorIs(t, err, ErrMalformed)
		require.ErrorContains(t, err, "want 32")
	}
}

// fixedNonce is the acceptor's nonce in the fuzz tests, so that the
// seeds can hold the one valid challenge and proof.
var fixedNonce = Nonce{1, 2, 3}

// FuzzChallenge feeds arbitrary bytes to what a dialer runs on the
// acceptor's CHALLENGE: it never panics, accepts only exactly
// ChallengeLen bytes, which re-encode to themselves, and answers only the
// one challenge that proves the secret.
func FuzzChallenge(f *testing.F) {
	valid := TCP.accept(secret, hello, fixedNonce).Challenge()
	f.Add(valid.Append(nil))
	f.Add(make([]byte, ChallengeLen))
	f.Add([]byte("short"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ch, err := ParseChallenge(b)
		if err != nil {
			require.ErrorIs(t, err, ErrMalformed)
			return
		}
		require.Equal(t, b, ch.Append(nil))
		_, err = TCP.Answer(secret, hello, &ch)
		if ch != valid {
			require.ErrorIs(t, err, ErrUnproven)
		} else {
			require.NoError(t, err)
		}
	})
}

// FuzzProof feeds arbitrary bytes to what an acceptor runs on the
// dialer's PROOF: only the one right proof is accepted.
func FuzzProof(f *testing.F) {
	a := Bootstrap.accept(secret, hello, fixedNonce)
	ch := a.Challenge()
	right, err := Bootstrap.Answer(secret, hello, &ch)
	require.NoError(f, err)
	f.Add(right[:])
	f.Add(ch.MAC[:])
	f.Add(bytes.Repeat([]byte{0xff}, ProofLen+1))
	f.Fuzz(func(t *testing.T, b []byte) {
		proof, err := ParseProof(b)
		if err != nil {
			require.ErrorIs(t, err, ErrMalformed)
			return
		}
		require.Equal(t, b, proof[:])
		if err := a.Verify(&proof); proof != right {
			require.ErrorIs(t, err, ErrUnproven)
		} else {
			require.NoError(t, err)
		}
	})
}
