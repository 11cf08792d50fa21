package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/version"
	"github.com/goshmem/goshmem/launcher"
)

func init() {
	extraRoles["env"] = envPE
}

// envPE prints the variables named in its arguments as it sees them.
func envPE(rank int, args []string) int {
	var parts []string
	for _, k := range args {
		v, ok := os.LookupEnv(k)
		parts = append(parts, fmt.Sprintf("%s=%q/%v", k, v, ok))
	}
	fmt.Printf("rank %d %s\n", rank, strings.Join(parts, " "))
	return 0
}

func TestVersionFlag(t *testing.T) {
	for _, spelling := range []string{"-version", "--version"} {
		t.Run(spelling, func(t *testing.T) {
			// No -np and no program: --version needs neither.
			code, stdout, stderr := runOshrun(t, spelling)
			require.Equal(t, 0, code, stderr)
			require.Equal(t, version.Line("oshrun")+"\n", stdout)
			require.True(t, strings.HasPrefix(stdout, "oshrun: goshmem "), stdout)
			require.Empty(t, stderr)
		})
	}
}

// What Open MPI users type is refused only when it would mean something
// oshrun does not do, and a misspelt flag is answered with the one meant.
func TestOpenMPISpellingsAndMisspellings(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		want   string // in stderr
		unwant string // not in stderr
	}{
		{"np misspelt", []string{"-npp", "2", os.Args[0]}, "oshrun: unknown flag -npp; did you mean -np?\n", ""},
		{"double dash misspelt", []string{"--verison"}, "oshrun: unknown flag -verison; did you mean -version?\n", ""},
		{"oversubscribe misspelt", []string{"--oversubscrbe", "-np", "2", os.Args[0]}, "did you mean -oversubscribe?", ""},
		{"bind-to misspelt", []string{"--bind_to", "core", "-np", "2", os.Args[0]}, "did you mean -bind-to?", ""},
		{"nothing close", []string{"-np", "2", "-frobnicate", os.Args[0]}, "oshrun: unknown flag -frobnicate\n", "did you mean"},
		{"one letter", []string{"-y", "-np", "2", os.Args[0]}, "oshrun: unknown flag -y\n", "did you mean"},
		{"bind-to socket", []string{"--bind-to", "socket", "-np", "2", os.Args[0]}, `"socket" is not one of share, core, none`, ""},
		{"bind-to nothing", []string{"-np", "2", "--bind-to"}, "flag needs an argument: -bind-to", ""},
		{"x without a name", []string{"-x", "=1", "-np", "2", os.Args[0]}, `want VAR or VAR=value, got "=1"`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runOshrun(t, tc.args...)
			require.Equal(t, 2, code, stderr)
			require.Empty(t, stdout)
			require.Contains(t, stderr, tc.want)
			if tc.unwant != "" {
				require.NotContains(t, stderr, tc.unwant)
			}
			require.Contains(t, stderr, "usage: oshrun -np N")
		})
	}
}

func TestEnvAndCompatibilityFlags(t *testing.T) {
	t.Setenv(peEnv, "env")
	t.Setenv("OSHRUN_TEST_INHERITED", "from-oshrun")
	code, stdout, stderr := runOshrun(t, "--np", "2", "--tag-output", "--oversubscribe", "--bind-to", "none",
		"-x", "OSHRUN_TEST_SET=a=b", "-x", "OSHRUN_TEST_INHERITED", "--x", "OSHRUN_TEST_UNSET",
		os.Args[0], "OSHRUN_TEST_SET", "OSHRUN_TEST_INHERITED", "OSHRUN_TEST_UNSET")
	require.Equal(t, 0, code, stderr)
	for r := range 2 {
		require.Contains(t, stdout, fmt.Sprintf(`[pe %d] rank %d OSHRUN_TEST_SET="a=b"/true OSHRUN_TEST_INHERITED="from-oshrun"/true OSHRUN_TEST_UNSET=""/false`, r, r))
	}
}

// --bind-to and -cpubind set one thing: the last on the line wins; share
// unless told.
func TestBindToIsCPUBind(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want launcher.Binding
	}{
		{nil, launcher.BindShare},
		{[]string{"--bind-to", "core"}, launcher.BindCore},
		{[]string{"--bind-to=none"}, launcher.BindNone},
		{[]string{"-cpubind", "--bind-to", "none"}, launcher.BindNone},
		{[]string{"--bind-to", "none", "-cpubind"}, launcher.BindCore},
		{[]string{"--bind-to", "core", "-cpubind=false"}, launcher.BindNone},
		{[]string{"--bind-to", "none", "--bind-to", "share"}, launcher.BindShare},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		cpubind := launcher.BindShare
		fs.Var(cpubindFlag{&cpubind}, "cpubind", "")
		fs.Var(bindToFlag{&cpubind}, "bind-to", "")
		require.NoError(t, fs.Parse(tc.args))
		require.Equal(t, tc.want, cpubind, "%q", tc.args)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cpubind := launcher.BindShare
	fs.Var(bindToFlag{&cpubind}, "bind-to", "")
	require.ErrorContains(t, fs.Parse([]string{"--bind-to", "socket"}), `"socket" is not one of share, core, none`)
}

func TestSuggest(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	for _, n := range []string{"np", "n", "v", "version", "tag", "bind", "bind-to", "provider", "grace"} {
		fs.Bool(n, false, "")
	}
	for _, tc := range []struct{ name, want string }{
		{"npp", "np"},
		{"pn", "np"}, // a swap is one edit
		{"vesrion", "version"},
		{"VERSION", "version"},
		{"provder", "provider"},
		{"bindto", "bind-to"},
		{"binf", "bind"},
		{"gracefully", ""},
		{"q", ""},
		{"xyz", ""},
	} {
		require.Equal(t, tc.want, suggest(fs, tc.name), tc.name)
	}
	require.Equal(t, 0, editDistance("", ""))
	require.Equal(t, 3, editDistance("abc", ""))
	require.Equal(t, 1, editDistance("ab", "ba"))
	require.Equal(t, 3, editDistance("kitten", "sitting"))
}
