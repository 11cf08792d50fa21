package main

import (
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/examples/internal/exampletest"
)

// Every PE's goroutines share the rows out; the image PE 0 gathers hashes
// to the same sum as the one computed here, and the rows per PE add up to
// the height.
func TestMandelbrot(t *testing.T) {
	oshrun, mandelbrot := exampletest.Build(t, "github.com/goshmem/goshmem/examples/mandelbrot")
	s := scene{width: 320, height: 200, iters: 200}
	img := make([]uint8, s.width*s.height)
	s.rows(img, 0, s.height)
	line := regexp.MustCompile(`mandelbrot: (\d) PEs x 3 workers, 320x200, 200 iterations over loopback: verified, checksum (0x[0-9a-f]+), rows per PE ([0-9/]+)`)
	for _, np := range []int{2, 3} {
		t.Run(fmt.Sprintf("%dPEs", np), func(t *testing.T) {
			cmd := exec.Command(oshrun, "-np", strconv.Itoa(np), mandelbrot,
				"-width", "320", "-height", "200", "-iters", "200", "-workers", "3", "-block", "3")
			cmd.Env = append(cmd.Environ(), "GOSHMEM_SHM_DIR="+t.TempDir())
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			m := line.FindStringSubmatch(string(out))
			require.NotNil(t, m, "no verification line in:\n%s", out)
			require.Equal(t, strconv.Itoa(np), m[1])
			require.Equal(t, fmt.Sprintf("%#016x", checksum(img)), m[2])
			perPE := strings.Split(m[3], "/")
			require.Len(t, perPE, np)
			total := 0
			for _, r := range perPE {
				n, err := strconv.Atoi(r)
				require.NoError(t, err)
				total += n
			}
			require.Equal(t, s.height, total, "rows per PE %s", m[3])
		})
	}
}

func TestMandelbrotBadFlags(t *testing.T) {
	_, mandelbrot := exampletest.Build(t, "github.com/goshmem/goshmem/examples/mandelbrot")
	for _, args := range [][]string{{"-workers", "0"}, {"-out", "image.jpg"}} {
		out, err := exec.Command(mandelbrot, args...).CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%v: %s", args, out)
		require.Equal(t, 2, ee.ExitCode(), "%v: %s", args, out)
		require.Contains(t, string(out), args[0])
	}
}
