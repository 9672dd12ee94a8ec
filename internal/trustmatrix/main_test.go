// Package trustmatrix proves, against nats-server processes, that nothing
// jsctl recorded earlier is trusted when it is used: every command that
// reads recorded state (a plan file, an intent, a history record, a
// snapshot, an ack record or floor, a replica's copies) is run after every
// fault that can lie between the record and its use (the stream or the
// consumer created again, the object edited, a record that does not
// parse, one made for another object, one with hostile values). Each cell
// asserts one outcome, refused or reported and skipped, and checks with a
// plain nats.go client that nothing was acted on wrongly: the consumers'
// positions and configurations, and what jsctl published (a subscription
// on ">" of the same server).
//
// jsctl runs as cmd/jsctl built as users build it (internal/jsctlbin), or,
// with JSCTL_TEST_RACE_CLI=1, as this -race test binary; nats-server is
// built from the pinned module (internal/natsproc). Cells share a few
// servers and run in parallel, each on streams of its own. go test -short
// skips the servers (TestMatrixCoversEveryReader and TestMatrixDocCurrent
// still run). docs/guarantees.md shows the matrix: go test
// ./internal/trustmatrix -run TestMatrixDocCurrent -update.
package trustmatrix

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/jsctl/jsctl/commands"
	"github.com/jsctl/jsctl/internal/jsctlbin"
)

// jsctlEnv, set to 1, makes the test binary run as jsctl.
const jsctlEnv = "JSCTL_TRUSTMATRIX_JSCTL"

// jsctlBinEnv names the jsctl binary the cells run (TestMain sets it, but
// not under JSCTL_TEST_RACE_CLI=1).
const jsctlBinEnv = "JSCTL_TRUSTMATRIX_BIN"

var (
	update = flag.Bool("update", false, "rewrite the matrix in docs/guarantees.md")
	show   = flag.Bool("show", false, "log every cell's run (what jsctl printed and published)")
)

func TestMain(m *testing.M) {
	if os.Getenv(jsctlEnv) == "1" {
		os.Exit(commands.Main(os.Args[1:]))
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if !testing.Short() {
		bin, remove, err := jsctlbin.BuildTemp()
		defer remove()
		if err != nil {
			fmt.Fprintln(os.Stderr, "trustmatrix:", err)
			return 1
		}
		os.Setenv(jsctlBinEnv, bin)
	}
	return m.Run()
}
