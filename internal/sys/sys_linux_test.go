//go:build linux

package sys

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// word is the uint32 at b[off:], for tests; providers use internal/mem.
func word(b []byte, off int) *uint32 { return (*uint32)(unsafe.Pointer(&b[off])) }

func TestCreateOpenShareMemory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	a, err := CreateShared(path, 8192)
	require.NoError(t, err)
	b, err := OpenShared(path, 8192)
	require.NoError(t, err)
	require.Len(t, a, 8192)
	require.Equal(t, make([]byte, 8192), a, "a new file reads as zeros")

	copy(a[4000:], "hello")
	require.Equal(t, "hello", string(b[4000:4005]), "two mappings of one file share memory")

	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	// The mappings outlive the name.
	require.NoError(t, os.Remove(path))
	b[0] = 7
	require.Equal(t, byte(7), a[0])

	require.NoError(t, Unmap(a))
	require.NoError(t, Unmap(b))
	require.Error(t, Unmap(b), "a second unmap of the same mapping")
	require.NoError(t, Unmap(nil))
}

func TestCreateOpenErrors(t *testing.T) {
	dir := t.TempDir()
	exist := filepath.Join(dir, "exist")
	m, err := CreateShared(exist, 4096)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, Unmap(m)) })

	tests := []struct {
		name  string
		call  func() ([]byte, error)
		is    error
		check func(t *testing.T)
	}{
		{name: "create existing", call: func() ([]byte, error) { return CreateShared(exist, 4096) }, is: os.ErrExist},
		{name: "create zero size", call: func() ([]byte, error) { return CreateShared(filepath.Join(dir, "zero"), 0) },
			check: func(t *testing.T) { require.NoFileExists(t, filepath.Join(dir, "zero")) }},
		{name: "create in missing dir", call: func() ([]byte, error) { return CreateShared(filepath.Join(dir, "no", "f"), 64) },
			is: os.ErrNotExist},
		{name: "open missing", call: func() ([]byte, error) { return OpenShared(filepath.Join(dir, "missing"), 64) },
			is: os.ErrNotExist},
		{name: "open wrong size", call: func() ([]byte, error) { return OpenShared(exist, 8192) }},
		{name: "open negative size", call: func() ([]byte, error) { return OpenShared(exist, -1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.call()
			require.Error(t, err)
			require.Nil(t, b)
			if tt.is != nil {
				require.ErrorIs(t, err, tt.is)
			}
			if tt.check != nil {
				tt.check(t)
			}
		})
	}
}

func TestFutexWaitReturns(t *testing.T) {
	m, err := CreateShared(filepath.Join(t.TempDir(), "f"), 4096)
	require.NoError(t, err)
	defer func() { require.NoError(t, Unmap(m)) }()
	w := word(m, 64)
	atomic.StoreUint32(w, 5)

	require.NoError(t, FutexWait(w, 4, time.Second), "a stale value returns at once")
	start := time.Now()
	require.ErrorIs(t, FutexWait(w, 5, time.Millisecond), os.ErrDeadlineExceeded)
	require.GreaterOrEqual(t, time.Since(start), time.Millisecond)
	n, err := FutexWake(w, WakeAll)
	require.NoError(t, err)
	require.Zero(t, n, "nobody waits")
}

// TestFutexWakeAcrossMappings is the property loopback relies on: a waiter
// on one mapping of a file is woken through another mapping of it, at
// another address, as a waiter in another process would be.
func TestFutexWakeAcrossMappings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	a, err := CreateShared(path, 4096)
	require.NoError(t, err)
	b, err := OpenShared(path, 4096)
	require.NoError(t, err)
	defer func() { require.NoError(t, errors.Join(Unmap(a), Unmap(b))) }()
	require.NotEqual(t, unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0]))

	done := make(chan error, 1)
	go func() { done <- FutexWait(word(a, 128), 0, time.Minute) }()
	// The word stays 0, so only a wake can end the wait; retry until the
	// waiter is asleep and the kernel reports it woken.
	for {
		n, err := FutexWake(word(b, 128), WakeAll)
		require.NoError(t, err)
		if n == 1 {
			break
		}
		runtime.Gosched()
	}
	require.NoError(t, <-done)
}

func TestYield(t *testing.T) {
	for range 10 {
		Yield()
	}
}

func BenchmarkYield(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Yield()
	}
}

func BenchmarkFutexWakeNobody(b *testing.B) {
	m, err := CreateShared(filepath.Join(b.TempDir(), "f"), 4096)
	require.NoError(b, err)
	defer func() { require.NoError(b, Unmap(m)) }()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FutexWake(word(m, 0), WakeAll); err != nil {
			b.Fatal(err)
		}
	}
}

// A revoked mapping reads as zeros and takes writes without faulting,
// also while another goroutine keeps using it, and no longer shares the
// file; it is then unmapped as before.
func TestRevoke(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	a, err := CreateShared(path, 8192)
	require.NoError(t, err)
	b, err := OpenShared(path, 8192)
	require.NoError(t, err)
	copy(a, "hello")

	stop := make(chan struct{})
	done := make(chan struct{})
	var writes atomic.Int64
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			atomic.AddUint32(word(b, 4096+4*(i%1024)), 1) // the second page
			writes.Add(1)
		}
	}()
	// The writer is busy before, across and after the revocation (assert:
	// a failure still stops it).
	writing := func(n int64) func() bool { return func() bool { return writes.Load() >= n } }
	assert.Eventually(t, writing(1000), 10*time.Second, 100*time.Microsecond, "writes before Revoke")
	assert.NoError(t, Revoke(b))
	assert.Eventually(t, writing(writes.Load()+1000), 10*time.Second, 100*time.Microsecond, "writes after Revoke")
	close(stop)
	<-done
	if t.Failed() {
		t.FailNow()
	}

	copy(b, "other")
	require.Equal(t, "hello", string(a[:5]), "the file no longer sees writes through b")
	b2, err := OpenShared(path, 8192)
	require.NoError(t, err)
	require.Equal(t, "hello", string(b2[:5]))
	require.NoError(t, Unmap(b2))
	require.NoError(t, Unmap(b))
	require.NoError(t, Unmap(a))
	require.NoError(t, Revoke(nil))
}
