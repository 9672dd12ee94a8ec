package testserver

import (
	"os/exec"
	"testing"
)

// KillAtEnd kills cmd's process (SIGKILL, by its PID) when t ends, if it
// was started and has not been waited for. Register it after the temporary
// directories the process writes to (cleanups run last-registered first):
// a test that fails while the process runs then leaves no process behind,
// writing into a removed directory and taking CPU from the tests after it.
func KillAtEnd(t testing.TB, cmd *exec.Cmd) {
	t.Cleanup(func() {
		if cmd.Process != nil {
			_ = cmd.Process.Kill() // an error only says it has already ended
		}
	})
}
