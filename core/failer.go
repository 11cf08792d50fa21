package core

// Failer is implemented by domains that can fail as a whole while every
// PE still lives: a ring whose link went down can carry nothing more, so
// every operation would fail. Err returns that failure (wrapping one of
// the sentinels, usually ErrPeerLost) or nil. Code that waits on memory
// and polls the bootstrap's Err for lost PEs should poll this too, or it
// waits forever for a store that can no longer come.
type Failer interface {
	Err() error
}
