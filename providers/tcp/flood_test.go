package tcp

import (
	"crypto/rand"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A stranger hammering a PE's port writes a few warnings and then a
// count, not a line per connection; and the line does not name the PE,
// which the caller's logger does already.
func TestRefusalsDoNotFloodTheLog(t *testing.T) {
	const hammer = 200
	doms, logs := openJob(t, 2, map[string]string{paramTimeout.Env: "1s"})
	addr := doms[0].ln.Addr().String()
	junk := make([]byte, 256)
	_, _ = rand.Read(junk)
	for range hammer {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		_, _ = c.Write(junk)
		closedByPeer(t, c) // the refusal is logged (or counted) by then
		_ = c.Close()
	}
	refusals := func() (lines, counted int) {
		for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			if !strings.Contains(l, "refused a connection") {
				continue
			}
			require.NotContains(t, l, " pe=", "the provider names the PE again: %s", l)
			lines++
			if _, n, ok := strings.Cut(l, "suppressed="); ok {
				k, err := strconv.Atoi(strings.Fields(n)[0])
				require.NoError(t, err, l)
				counted += k
			} else {
				counted++
			}
		}
		return lines, counted
	}
	lines, _ := refusals()
	require.LessOrEqual(t, lines, 21, "a warning per connection:\n%s", logs)
	// Close writes the count of those not written one by one.
	closeAll(t, doms)
	lines, counted := refusals()
	require.Equal(t, hammer, counted, "refusals lost from the log:\n%s", logs)
	require.LessOrEqual(t, lines, 22, "a warning per connection:\n%s", logs)
}
