// Package auth is the challenge-response handshake by which two processes
// of one job prove to each other that they know the job's secret, before
// either trusts the other. The bootstrap store and the tcp provider both
// open their connections with it; it is kept once, here, because it is
// security code.
//
// The exchange, on every new connection (k is the job's secret):
//
//	D->A HELLO     the dialer's claims, including nd   (nd: NewNonce)
//	A->D CHALLENGE na, HMAC(k, acceptor label, HELLO, na)   (Accept)
//	D->A PROOF     HMAC(k, dialer label, HELLO, na)        (Answer)
//	A->D WELCOME   or the acceptor refuses and closes      (Verify)
//
// Each side proves it knows k over a nonce the other side just drew (nd,
// na), so a recorded exchange replayed on a new connection fails: the
// acceptor draws a new na, and a dialer a new nd. The labels differ by
// protocol and by role, so one side's proof is never valid as the
// other's, nor in another protocol; the whole HELLO is under both MACs, so
// a proof made for one membership (ranks, job size, domain) is not valid
// for another. The secret never crosses the wire. Answer checks the
// acceptor's proof before it computes the dialer's, so an impostor
// acceptor learns nothing it could use; the API offers no way to do it in
// the other order, nor to choose the acceptor's nonce.
//
// HELLO, WELCOME and how the messages are framed belong to each protocol;
// this package computes and checks the proofs and decodes the two
// messages that carry them, CHALLENGE and PROOF.
//
// This authenticates the connection set-up only: what follows WELCOME is
// neither encrypted nor integrity protected, and an attacker able to
// hijack an established TCP connection is out of scope. With an empty
// secret the same exchange runs with an empty HMAC key, which anyone can
// compute: the job is then unauthenticated.
package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
)

// Sizes of what crosses the wire.
const (
	NonceLen     = 32
	MACLen       = sha256.Size
	ChallengeLen = NonceLen + MACLen
	ProofLen     = MACLen
)

// A Nonce is drawn fresh for every handshake by the side that sends it.
type Nonce [NonceLen]byte

// A MAC is one side's proof: HMAC-SHA256 keyed with the job's secret.
type MAC [MACLen]byte

// NewNonce draws a nonce from the system's random source.
func NewNonce() (Nonce, error) {
	var n Nonce
	_, err := rand.Read(n[:])
	return n, err
}

var (
	// ErrMalformed is wrapped by the errors of ParseChallenge and
	// ParseProof: the peer's bytes are not a message of the handshake.
	ErrMalformed = errors.New("auth: malformed handshake message")
	// ErrUnproven is wrapped by Answer's and Verify's errors: the peer's
	// proof is wrong, so it does not know the job's secret (or it is not
	// the peer the HELLO names).
	ErrUnproven = errors.New("auth: the peer does not prove the job secret")
)

// A Protocol is one use of the handshake, with a label per role. Its
// labels are used by nothing else, and no label is a prefix of another
// (the test checks both), so no proof is valid in another protocol or
// role.
type Protocol struct {
	acceptor, dialer string
}

// The protocols that use the handshake. Their labels are on the wire:
// changing one is a protocol change.
var (
	// Bootstrap: a member (the dialer) joining the bootstrap store (the
	// acceptor).
	Bootstrap = Protocol{acceptor: "goshmem bootstrap v1 server proof", dialer: "goshmem bootstrap v1 client proof"}
	// TCP: the tcp provider's PE of higher rank (the dialer) connecting to
	// the lower one (the acceptor).
	TCP = Protocol{acceptor: "goshmem tcp v1 acceptor proof", dialer: "goshmem tcp v1 dialer proof"}
)

var protocols = []Protocol{Bootstrap, TCP}

// sum is HMAC-SHA256(secret, label || hello || n).
func sum(secret []byte, label string, hello []byte, n *Nonce) MAC {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(label))
	h.Write(hello)
	h.Write(n[:])
	var out MAC
	h.Sum(out[:0])
	return out
}

// A Challenge is the acceptor's answer to a HELLO: its fresh nonce and its
// proof over the HELLO and that nonce. On the wire it is Nonce then MAC,
// ChallengeLen bytes.
type Challenge struct {
	Nonce Nonce
	MAC   MAC
}

// Append appends the challenge's wire form to b.
func (c Challenge) Append(b []byte) []byte {
	return append(append(b, c.Nonce[:]...), c.MAC[:]...)
}

// ParseChallenge decodes a challenge from exactly ChallengeLen bytes; the
// error wraps ErrMalformed.
func ParseChallenge(b []byte) (Challenge, error) {
	var c Challenge
	if len(b) != ChallengeLen {
		return c, fmt.Errorf("%w: a challenge of %d bytes, want %d", ErrMalformed, len(b), ChallengeLen)
	}
	copy(c.Nonce[:], b)
	copy(c.MAC[:], b[NonceLen:])
	return c, nil
}

// ParseProof decodes a proof from exactly ProofLen bytes; the error wraps
// ErrMalformed.
func ParseProof(b []byte) (MAC, error) {
	var m MAC
	if len(b) != ProofLen {
		return m, fmt.Errorf("%w: a proof of %d bytes, want %d", ErrMalformed, len(b), ProofLen)
	}
	copy(m[:], b)
	return m, nil
}

// An Acceptor is the acceptor's side of one handshake, between sending
// its challenge and checking the dialer's proof.
type Acceptor struct {
	p         Protocol
	secret    []byte
	hello     []byte
	challenge Challenge
}

// Accept starts the acceptor's side of a handshake over hello, the
// dialer's HELLO exactly as it arrived (the acceptor has checked its
// claims): it draws a fresh nonce and proves the secret over both. Send
// Challenge to the dialer, then give its proof to Verify.
func (p Protocol) Accept(secret, hello []byte) (*Acceptor, error) {
	n, err := NewNonce()
	if err != nil {
		return nil, err
	}
	return p.accept(secret, hello, n), nil
}

func (p Protocol) accept(secret, hello []byte, n Nonce) *Acceptor {
	a := &Acceptor{p: p, secret: secret, hello: append([]byte(nil), hello...)}
	a.challenge = Challenge{Nonce: n, MAC: sum(secret, p.acceptor, a.hello, &n)}
	return a
}

// Challenge is what the acceptor sends the dialer.
func (a *Acceptor) Challenge() Challenge { return a.challenge }

// Verify checks the dialer's proof in constant time: nil if the dialer
// knows the secret, else an error that wraps ErrUnproven.
func (a *Acceptor) Verify(proof *MAC) error {
	want := sum(a.secret, a.p.dialer, a.hello, &a.challenge.Nonce)
	if !hmac.Equal(want[:], proof[:]) {
		return fmt.Errorf("%w: wrong proof from the dialer", ErrUnproven)
	}
	return nil
}

// Answer is the dialer's side: hello is the HELLO it sent, which holds a
// nonce it drew with NewNonce for this connection, and ch the acceptor's
// challenge. It checks the acceptor's proof first, in constant time, and
// only if that is right returns the dialer's proof to send; otherwise the
// error wraps ErrUnproven and the dialer must send nothing more.
func (p Protocol) Answer(secret, hello []byte, ch *Challenge) (MAC, error) {
	want := sum(secret, p.acceptor, hello, &ch.Nonce)
	if !hmac.Equal(want[:], ch.MAC[:]) {
		return MAC{}, fmt.Errorf("%w: wrong proof from the acceptor", ErrUnproven)
	}
	return sum(secret, p.dialer, hello, &ch.Nonce), nil
}
