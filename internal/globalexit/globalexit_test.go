package globalexit

import (
	"testing"

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

func FuzzParse(f *testing.F) {
	for _, s := range []string{"1 0\n", "0 255\n", "3 -1\n", "", "x y", "1 2 3", "-1 4", " 2\t-7 "} {
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
	})
}
