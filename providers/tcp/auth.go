package tcp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/goshmem/goshmem/internal/auth"
)

// The handshake that opens every connection between two PEs is
// internal/auth's (protocol auth.TCP). The PE with the higher rank dials,
// the lower one accepts, so a pair never opens two connections:
//
//	D->A HELLO     magic, version, size, from, to, domain, nd
//	A->D CHALLENGE na, the acceptor's proof over HELLO and na
//	D->A PROOF     the dialer's proof over the same
//	A->D WELCOME   (one byte) or the acceptor closes
//
// The whole HELLO is under both proofs, so a proof made for one pair of
// ranks or one domain is not valid for another. With an empty secret the
// job is unauthenticated, as the bootstrap store is then.
const (
	magic        = "goshmtcp"
	protoVersion = 1
	nonceLen     = auth.NonceLen
	macLen       = auth.MACLen
	helloLen     = len(magic) + 2 + 2 + 4 + 4 + 4 + 8 + nonceLen
	challengeLen = auth.ChallengeLen
	welcome      = 0xA5
)

// hello is the dialer's first message.
type hello struct {
	size, from, to uint32
	domain         uint64
	nonce          auth.Nonce
}

func (h *hello) encode() []byte {
	b := make([]byte, 0, helloLen)
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint16(b, protoVersion)
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = binary.LittleEndian.AppendUint32(b, h.size)
	b = binary.LittleEndian.AppendUint32(b, h.from)
	b = binary.LittleEndian.AppendUint32(b, h.to)
	b = binary.LittleEndian.AppendUint64(b, h.domain)
	return append(b, h.nonce[:]...)
}

var errHandshake = errors.New("handshake refused")

func decodeHello(b []byte) (hello, error) {
	var h hello
	if len(b) != helloLen || string(b[:len(magic)]) != magic {
		return h, fmt.Errorf("%w: not a goshmem tcp peer", errHandshake)
	}
	b = b[len(magic):]
	if v := binary.LittleEndian.Uint16(b); v != protoVersion || binary.LittleEndian.Uint16(b[2:]) != 0 {
		return h, fmt.Errorf("%w: protocol version %d, this PE speaks %d", errHandshake, v, protoVersion)
	}
	h.size = binary.LittleEndian.Uint32(b[4:])
	h.from = binary.LittleEndian.Uint32(b[8:])
	h.to = binary.LittleEndian.Uint32(b[12:])
	h.domain = binary.LittleEndian.Uint64(b[16:])
	copy(h.nonce[:], b[24:])
	return h, nil
}

// dialHandshake runs the dialer's side on c: this PE (from) asks to be
// peer to (to) in the job of size PEs and the given domain.
func dialHandshake(c net.Conn, secret []byte, h hello, deadline time.Time) error {
	if err := c.SetDeadline(deadline); err != nil {
		return err
	}
	var err error
	if h.nonce, err = auth.NewNonce(); err != nil {
		return err
	}
	hb := h.encode()
	if _, err := c.Write(hb); err != nil {
		return err
	}
	var chb [challengeLen]byte
	if _, err := io.ReadFull(c, chb[:]); err != nil {
		return fmt.Errorf("%w: no challenge from PE %d (%v): is the job secret the same on every PE?", errHandshake, h.to, err)
	}
	ch, err := auth.ParseChallenge(chb[:])
	if err != nil {
		return err
	}
	proof, err := auth.TCP.Answer(secret, hb, &ch)
	if err != nil {
		return fmt.Errorf("%w: the listener at %s cannot prove the job secret: it is not PE %d of this job", errHandshake, c.RemoteAddr(), h.to)
	}
	if _, err := c.Write(proof[:]); err != nil {
		return err
	}
	var w [1]byte
	if _, err := io.ReadFull(c, w[:]); err != nil || w[0] != welcome {
		return fmt.Errorf("%w: PE %d did not welcome this PE (%v)", errHandshake, h.to, err)
	}
	return c.SetDeadline(time.Time{})
}

// acceptHandshake runs the acceptor's side on c and returns the dialer's
// rank. accept checks the HELLO's claims (job size, ranks, domain) before
// any proof is computed. The caller sends WELCOME once it has taken the
// connection, so a duplicate is refused without a welcome.
func acceptHandshake(c net.Conn, secret []byte, deadline time.Time, accept func(h *hello) error) (int, error) {
	if err := c.SetDeadline(deadline); err != nil {
		return 0, err
	}
	hb := make([]byte, helloLen)
	if _, err := io.ReadFull(c, hb); err != nil {
		return 0, fmt.Errorf("%w: incomplete hello: %v", errHandshake, err)
	}
	h, err := decodeHello(hb)
	if err != nil {
		return 0, err
	}
	if err := accept(&h); err != nil {
		return 0, err
	}
	a, err := auth.TCP.Accept(secret, hb)
	if err != nil {
		return 0, err
	}
	if _, err := c.Write(a.Challenge().Append(nil)); err != nil {
		return 0, err
	}
	var proof auth.MAC
	if _, err := io.ReadFull(c, proof[:]); err != nil {
		return 0, fmt.Errorf("%w: no proof from the dialer: %v", errHandshake, err)
	}
	if a.Verify(&proof) != nil {
		return 0, fmt.Errorf("%w: wrong proof of the job secret from a dialer claiming PE %d", errHandshake, h.from)
	}
	return int(h.from), c.SetDeadline(time.Time{})
}
