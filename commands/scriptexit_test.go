package commands_test

import (
	"errors"
	"os/exec"
	"strconv"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdExitCode runs a program like exec and checks its exit code:
//
//	exit-code N PROG [ARGS...]
//
// PROG runs as a subprocess (usually the test binary's `jsctl`) in the
// script's directory with the script's environment and its `stdin`, exactly as
// `exec` would. The command fails unless PROG exits with code N (0 included).
// Its stdout and stderr are kept for the script's following `stdout`,
// `stderr` and `cmp` commands, as after `exec`:
//
//	exit-code 4 jsctl --server nats://127.0.0.1:1 version-needing-server
//	stderr 'nats://127.0.0.1:1'
//
// `! exit-code` is not supported: say the code you expect.
func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exit-code (give the expected code instead)")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exit-code N PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil || want < 0 || want > 255 {
		ts.Fatalf("exit-code: N must be a number from 0 to 255, got %q", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() < 0 {
			ts.Fatalf("exit-code: %s did not exit normally: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with code %d, want %d", args[1], got, want)
	}
}
