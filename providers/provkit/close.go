package provkit

import "sync"

// CloseOnce makes a domain's Close idempotent, as core.Domain asks: the
// first call runs the close and returns its error; a call meanwhile waits
// for it to finish, and every later call returns nil, for the first one
// reported.
type CloseOnce struct {
	once sync.Once
}

// Do runs close if no call ran it before, and returns its error.
func (c *CloseOnce) Do(close func() error) (err error) {
	c.once.Do(func() { err = close() })
	return err
}
