package embedded_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLibraryDoesNotImportServer: only this package compiles nats-server;
// programs that use the rest of the library stay small.
func TestLibraryDoesNotImportServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command in PATH: %v", err)
	}
	for _, pkg := range []string{"..", "../seek", "../acks", "../reset", "../positions", "../replica", "../failover"} {
		out, err := exec.Command(goBin, "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "github.com/nats-io/nats-server/") {
				t.Errorf("%s imports %s: only jsutil/embedded may import nats-server", pkg, dep)
				break
			}
		}
	}
}
