package globalexit

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestWriteFirstCallerWins(t *testing.T) {
	dir := t.TempDir() + "/job"
	_, _, ok := Read(dir)
	require.False(t, ok, "no file yet")
	require.NoError(t, Write(dir, 2, 7))
	require.NoError(t, Write(dir, 0, 9))
	pe, status, ok := Read(dir)
	require.True(t, ok)
	require.Equal(t, [2]int{2, 7}, [2]int{pe, status})
}

func TestWriteRefusesWhatCannotBeRecorded(t *testing.T) {
	dir := t.TempDir()
	require.ErrorContains(t, Write(dir+"/job", -1, 0), "PE -1: a PE is 0 or more")
	// The directory above the job's is the user's: it is not created.
	err := Write(dir+"/missing/job", 0, 1)
	require.ErrorContains(t, err, "recording global exit")
	require.NoDirExists(t, dir+"/missing")
}

// The library's exit keeps its reason, on one line and bounded; the
// program's own global_exit has none.
func TestRecordReason(t *testing.T) {
	dir := t.TempDir() + "/job"
	require.NoError(t, WriteReason(dir, 1, 1, "shmem_long_p: shmem: p: PE 3\nis out of range"))
	r, ok := ReadRecord(dir)
	require.True(t, ok)
	require.Equal(t, Record{PE: 1, Status: 1, Reason: "shmem_long_p: shmem: p: PE 3 is out of range"}, r)
	pe, status, ok := Read(dir)
	require.True(t, ok)
	require.Equal(t, [2]int{1, 1}, [2]int{pe, status})

	r, ok = ParseRecord(Format(2, 7))
	require.True(t, ok)
	require.Equal(t, Record{PE: 2, Status: 7}, r)
	r, ok = ParseRecord(FormatReason(0, 1, strings.Repeat("é", MaxReason)))
	require.True(t, ok)
	require.LessOrEqual(t, len(r.Reason), MaxReason)
	require.True(t, utf8.ValidString(r.Reason))
	_, ok = ParseRecord([]byte("1 2 3\nwhy"))
	require.False(t, ok)
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"1 0\n", "0 255\n", "3 -1\n", "", "x y", "1 2 3", "-1 4", " 2\t-7 ", "1 1\nshmem_free: why\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		pe, status, ok := Parse(b)
		if !ok {
			return
		}
		require.GreaterOrEqual(t, pe, 0)
		again, st2, ok2 := Parse(Format(pe, status))
		require.True(t, ok2)
		require.Equal(t, [2]int{pe, status}, [2]int{again, st2})
		r, _ := ParseRecord(b)
		r2, ok2 := ParseRecord(FormatReason(r.PE, r.Status, r.Reason))
		require.True(t, ok2)
		require.Equal(t, r, r2)
	})
}
