//go:build !unix

package tcp

import (
	"net"
	"syscall"
)

// rawConn returns nil here: the reader leaves all its writes to the
// writer goroutine.
func rawConn(net.Conn) syscall.RawConn { return nil }

// writeRaw is never called where rawConn returns nil.
func (w *writer) writeRaw(uintptr) bool { return true }

// readRaw is never called where rawConn returns nil.
func (s *sockReader) readRaw(uintptr) {}

// peekRaw is never called where rawConn returns nil.
func (s *sockReader) peekRaw(uintptr) bool { return true }
