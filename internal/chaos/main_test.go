// Package chaos holds fault-injection tests that run jsctl and nats-server
// as real processes and kill them (kill -9) at random moments. The test
// binary itself is jsctl (TestMain runs commands.Main when JSCTL_CHAOS_JSCTL
// is set); nats-server is built from the pinned module (internal/natsproc).
// go test -short skips the suite.
package chaos

import (
	"os"
	"testing"

	"github.com/jsctl/jsctl/commands"
)

// jsctlEnv, set to 1, makes the test binary run as jsctl.
const jsctlEnv = "JSCTL_CHAOS_JSCTL"

func TestMain(m *testing.M) {
	if os.Getenv(jsctlEnv) == "1" {
		os.Exit(commands.Main(os.Args[1:]))
	}
	os.Exit(m.Run())
}
