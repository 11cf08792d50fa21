package pmix

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestPresent(t *testing.T) {
	require.True(t, Present(env(EnvNamespace, "slurm.pmix.3.0", EnvRank, "2")))
	require.False(t, Present(env(EnvNamespace, "slurm.pmix.3.0")))
	require.False(t, Present(env(EnvRank, "2")))
	require.False(t, Present(env(EnvNamespace, " ", EnvRank, "2")))
	require.False(t, Present(env()))
}

func TestLibrary(t *testing.T) {
	require.Equal(t, DefaultLibrary, Library(env()))
	require.Equal(t, "/opt/pmix/lib/libpmix.so", Library(env(EnvLibrary, " /opt/pmix/lib/libpmix.so ")))
}

func TestParseRanks(t *testing.T) {
	for _, tc := range []struct {
		in   string
		size int
		want []int
	}{
		{"0", 1, []int{0}},
		{"0,1,2,3", 4, []int{0, 1, 2, 3}},
		{"3,1", 4, []int{1, 3}},
		{" 0-2 , 5 ", 8, []int{0, 1, 2, 5}},
		{"4-4", 5, []int{4}},
	} {
		got, err := ParseRanks(tc.in, tc.size)
		require.NoError(t, err, "%q", tc.in)
		require.Equal(t, tc.want, got, "%q", tc.in)
	}
	for _, tc := range []struct {
		in   string
		size int
		says string
	}{
		{"", 4, "is empty"},
		{"0,,1", 4, "not a decimal rank"},
		{"0,x", 4, "not a decimal rank"},
		{"-1", 4, "not a decimal rank"},
		{"+1", 4, "not a decimal rank"},
		{"4", 4, "not a rank below 4"},
		{"3-1", 4, "ends before it starts"},
		{"0-", 4, "not a decimal rank"},
		{"1,1", 4, "rank 1 twice"},
		{"0-2,2", 4, "rank 2 twice"},
		{"99999999999", 4, "not a decimal rank"},
	} {
		_, err := ParseRanks(tc.in, tc.size)
		require.ErrorIs(t, err, core.ErrInvalid, "%q", tc.in)
		require.Contains(t, err.Error(), tc.says, "%q", tc.in)
		require.Contains(t, err.Error(), "want comma-separated ranks", "%q", tc.in)
	}
	_, err := ParseRanks("0", 0)
	require.ErrorIs(t, err, core.ErrInvalid)
}

// FuzzParseRanks: PMIX_LOCAL_PEERS comes from the launcher's server. No
// input panics; what parses is ranks below the size, increasing, once
// each, and writes back to a list that parses the same.
func FuzzParseRanks(f *testing.F) {
	for _, s := range []string{"0", "0,1,2,3", "0-3,8", " 1 , 2 ", "3-1", "1,1", "", ",", "-", "0-2-4", "7"} {
		f.Add(s, 8)
	}
	f.Fuzz(func(t *testing.T, s string, size int) {
		if size < -1 || size > 1<<12 {
			return
		}
		got, err := ParseRanks(s, size)
		if err != nil {
			require.ErrorIs(t, err, core.ErrInvalid)
			return
		}
		require.NotEmpty(t, got)
		for i, r := range got {
			require.True(t, r >= 0 && r < size)
			if i > 0 {
				require.Greater(t, r, got[i-1])
			}
		}
		parts := make([]string, len(got))
		for i, r := range got {
			parts[i] = strconv.Itoa(r)
		}
		again, err := ParseRanks(strings.Join(parts, ","), size)
		require.NoError(t, err)
		require.Equal(t, got, again)
	})
}

func TestLibErrorIsOneLine(t *testing.T) {
	err := load("libpmix-absent-for-this-test.so.2")
	require.Error(t, err)
	require.ErrorIs(t, err, core.ErrNotSupported)
	require.NotContains(t, err.Error(), "\n")
	if cgoBuilt {
		require.Contains(t, err.Error(), "libpmix-absent-for-this-test.so.2")
		require.Contains(t, err.Error(), "libpmix2")
	}
}

func TestStatusError(t *testing.T) {
	require.ErrorIs(t, &StatusError{Code: statusTimeout, Text: "PMIX_ERR_TIMEOUT"}, core.ErrTimeout)
	require.ErrorIs(t, &StatusError{Code: statusNotFound, Text: "NOT-FOUND"}, core.ErrInvalid)
	require.Equal(t, "NOT-FOUND (PMIx status -46)", (&StatusError{Code: statusNotFound, Text: "NOT-FOUND"}).Error())
}

func TestShortVersion(t *testing.T) {
	require.Equal(t, "OpenPMIx 4.2.2rc2", shortVersion("OpenPMIx 4.2.2rc2 (PMIx Standard: 4.2, Stable ABI: 0.0, Provisional ABI: 0.0)"))
	require.Equal(t, "OpenPMIx 5.0.1", shortVersion("OpenPMIx 5.0.1"))
}

// TestLayoutMatchesHeader: the client declares the few PMIx structures it
// passes (pmix_proc_t, pmix_value_t, pmix_info_t) itself; where pmix.h is
// installed, their sizes must be the header's.
func TestLayoutMatchesHeader(t *testing.T) {
	if !cgoBuilt {
		t.Skip("built without cgo: no PMIx structures are declared")
	}
	// libpmix-dev's pkg-config file says where pmix.h is (Debian keeps
	// it out of the default include path).
	dir := ""
	if out, err := exec.Command("pkg-config", "--variable=includedir", "pmix").Output(); err == nil {
		dir = strings.TrimSpace(string(out))
	}
	if _, err := os.Stat(filepath.Join(dir, "pmix.h")); dir == "" || err != nil {
		t.Skip("pmix.h is not installed (apt-get install libpmix-dev pkg-config): the declared layout is not compared")
	}
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc is not installed: the declared layout is not compared")
	}
	src := filepath.Join(t.TempDir(), "layout.c")
	require.NoError(t, os.WriteFile(src, []byte(`#include <pmix.h>
#include <stdio.h>
int main(void) {
	printf("%zu %zu %zu\n", sizeof(pmix_proc_t), sizeof(pmix_value_t), sizeof(pmix_info_t));
	return 0;
}
`), 0o600))
	exe := filepath.Join(t.TempDir(), "layout")
	out, err := exec.Command(cc, "-I", dir, "-o", exe, src).CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command(exe).Output()
	require.NoError(t, err)
	proc, value, info := layout()
	require.Equal(t, strings.TrimSpace(string(out)), strconv.Itoa(proc)+" "+strconv.Itoa(value)+" "+strconv.Itoa(info),
		"pmix.h's sizes of pmix_proc_t, pmix_value_t and pmix_info_t against the client's")
}
