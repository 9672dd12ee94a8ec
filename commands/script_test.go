package commands_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/jsctl/jsctl/commands"
	"github.com/rogpeppe/go-internal/testscript"
)

var update = flag.Bool("update", false, "rewrite the golden sections of testdata/script/*.txtar")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"jsctl":       func() { os.Exit(commands.Main(os.Args[1:])) },
		"nats-server": natsServerMain,
	})
}

// TestScript runs the CLI golden tests, each with its own JetStream server.
// Run with -update to rewrite golden sections after an intended change.
func TestScript(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("..", "testdata", "script"),
		Setup:               setupScript,
		Cmds:                scriptCommands(),
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
	})
}
