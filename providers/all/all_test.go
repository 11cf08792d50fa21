package all_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoPluginHost: the built-in providers come without the plugin host.
// A program that links providers/all, such as examples/hello, links
// neither providers/plugin nor go-plugin nor gRPC; plugins are for the
// programs that import providers/plugin themselves.
func TestNoPluginHost(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, pkg := range []string{".", "../../examples/hello"} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		for _, d := range deps {
			for _, banned := range []string{"github.com/goshmem/goshmem/providers/plugin", "github.com/hashicorp/go-plugin", "google.golang.org/grpc"} {
				if d == banned || strings.HasPrefix(d, banned+"/") {
					t.Errorf("%s links %s", pkg, d)
				}
			}
		}
		t.Logf("%s: %d packages", pkg, len(deps))
	}
}
