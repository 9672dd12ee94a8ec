package commands_test

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jsctl/jsctl/commands"
	"github.com/jsctl/jsctl/internal/jsctlbin"
	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/rogpeppe/go-internal/testscript"
)

var update = flag.Bool("update", false, "rewrite the golden sections of testdata/script/*.txtar")

func TestMain(m *testing.M) {
	if strings.HasSuffix(filepath.Base(os.Args[0]), ".test") { // not when run as jsctl
		reportMissingShells()
		// Built with -race, a process sleeps a second before it exits
		// with 0 (GORACE atexit_sleep_ms): over the hundreds of jsctl
		// processes the tests start, that is minutes of nothing. Races
		// are still reported, as they happen.
		os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	}
	testscript.Main(plainJsctl{m}, map[string]func(){
		"jsctl": func() { os.Exit(commands.Main(os.Args[1:])) },
	})
}

// raceJsctlEnv names the -race test binary, run as jsctl, for the process
// tests that check concurrent code in a separate process (raceJsctl).
const raceJsctlEnv = "JSCTL_TEST_RACE_JSCTL"

// plainJsctl runs the tests with jsctl on PATH built as users build it
// (internal/jsctlbin explains why); testscript.Main has put the test binary
// on PATH as jsctl just before.
type plainJsctl struct{ m *testing.M }

func (p plainJsctl) Run() int {
	race, err := exec.LookPath("jsctl")
	if err != nil {
		fmt.Fprintf(os.Stderr, "jsctl tests: the test binary is not on PATH as jsctl: %v\n", err)
		return 1
	}
	os.Setenv(raceJsctlEnv, race)
	bin, remove, err := jsctlbin.BuildTemp()
	defer remove()
	if err != nil {
		fmt.Fprintln(os.Stderr, "jsctl tests:", err)
		return 1
	}
	if bin != "" {
		os.Setenv("PATH", filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	return p.m.Run()
}

// raceJsctl is the -race test binary, run as jsctl: for tests of the
// concurrent code of a jsctl process (consume's workers, handler processes
// and signals), which the race detector should watch.
func raceJsctl(t testing.TB) string {
	t.Helper()
	bin := os.Getenv(raceJsctlEnv)
	if bin == "" {
		t.Fatalf("%s is not set (TestMain sets it)", raceJsctlEnv)
	}
	return bin
}

// TestScript runs the CLI golden tests, each with its own JetStream server.
// Run with -update to rewrite golden sections after an intended change.
// Scripts may run a real nats-server process (`exec nats-server ... &`):
// the one internal/natsproc builds from the pinned module is on their PATH
// (not under -short, whose scripts skip it with [short]).
func TestScript(t *testing.T) {
	t.Parallel() // mostly waits (on processes, servers, timers): runs beside the others
	natsServerDir := ""
	if !testing.Short() {
		natsServerDir = filepath.Dir(natsproc.Binary(t))
	}
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("..", "testdata", "script"),
		Setup: func(env *testscript.Env) error {
			if natsServerDir != "" {
				env.Setenv("PATH", natsServerDir+string(os.PathListSeparator)+env.Getenv("PATH"))
			}
			return setupScript(env)
		},
		Cmds:                scriptCommands(),
		Condition:           scriptCondition,
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
	})
}

// reportMissingShells prints one line naming the completion shells that are
// not installed, whose tests will be skipped (they fail instead under
// CI=true). `go test ./...` hides the output of passing packages, so the
// line goes to the terminal when there is one.
func reportMissingShells() {
	if os.Getenv("CI") == "true" {
		return
	}
	var missing []string
	for _, sh := range []string{"bash", "zsh", "fish"} {
		if _, err := exec.LookPath(sh); err != nil {
			missing = append(missing, sh)
		}
	}
	if len(missing) == 0 {
		return
	}
	w := os.Stderr
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		w = tty
	}
	fmt.Fprintf(w, "jsctl tests: skipping the shell completion tests in %s: not installed (install them, or run bash .ci/run; with CI=true they fail instead)\n", strings.Join(missing, ", "))
}
