package bootstrap

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
)

// The handshake, on every new connection:
//
//	C->S HELLO     rank, size, nc            (nc: 32 fresh random bytes)
//	S->C CHALLENGE ns, HMAC(k, "...server", rank, size, nc, ns)
//	C->S PROOF     HMAC(k, "...client", rank, size, nc, ns)
//	S->C WELCOME   or REJECT(reason), then the server disconnects
//
// k is the job's secret. Each side proves it knows k over a nonce the other
// side just chose, so a recorded exchange cannot be replayed; the labels
// differ so one side's proof is never valid as the other's; rank and size
// are bound in so a proof made for one membership cannot be reused for
// another. The secret itself never crosses the wire. The client checks the
// server's proof before sending its own, so an impostor store learns
// nothing it could use.
//
// This authenticates the connection set-up only: frames after WELCOME are
// neither encrypted nor integrity protected. The store carries set-up
// metadata on a cluster network, not user data; an attacker able to
// hijack established TCP connections is out of scope.
//
// With an empty secret the same exchange runs with an empty HMAC key,
// which anyone can compute: the store is then unauthenticated.

const (
	labelServer = "goshmem bootstrap v1 server proof"
	labelClient = "goshmem bootstrap v1 client proof"
)

func proof(secret []byte, label string, rank, size uint32, nc, ns *[nonceLen]byte) [macLen]byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(label))
	var b [8]byte
	binary.BigEndian.PutUint32(b[0:], rank)
	binary.BigEndian.PutUint32(b[4:], size)
	m.Write(b[:])
	m.Write(nc[:])
	m.Write(ns[:])
	var out [macLen]byte
	m.Sum(out[:0])
	return out
}

func newNonce() ([nonceLen]byte, error) {
	var n [nonceLen]byte
	_, err := rand.Read(n[:])
	return n, err
}
