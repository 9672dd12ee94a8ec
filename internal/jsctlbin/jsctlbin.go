// Package jsctlbin gives tests that run jsctl as a separate process the
// binary to run.
//
// By default that is cmd/jsctl built the way users build it: without the
// race detector. A -race binary spends about 0.1 s starting and runs
// several times slower, and the CLI tests start hundreds of processes: on
// two cores that was most of the suite's time. The concurrent code is
// race-checked in-process by the library tests and by the process tests
// that ask for the test binary itself (see Race). Set JSCTL_TEST_RACE_CLI=1
// to run every jsctl process as the -race test binary instead.
package jsctlbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// RaceEnv, set to 1, makes Build return "" (the caller then runs its own
// -race test binary as jsctl).
const RaceEnv = "JSCTL_TEST_RACE_CLI"

// Race reports whether every jsctl process should be the -race test binary.
func Race() bool { return os.Getenv(RaceEnv) == "1" }

// BuildTemp is Build into a new temporary directory; remove removes it
// (call it when the tests are done, also after an error).
func BuildTemp() (bin string, remove func(), err error) {
	dir, err := os.MkdirTemp("", "jsctl-bin-")
	if err != nil {
		return "", func() {}, err
	}
	remove = func() { _ = os.RemoveAll(dir) }
	bin, err = Build(dir)
	return bin, remove, err
}

// Build builds this module's cmd/jsctl into dir and returns its path, or ""
// under Race. It takes a second or two when the build cache is warm (CI
// runs `go build ./...` first).
func Build(dir string) (string, error) {
	if Race() {
		return "", nil
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	bin := filepath.Join(dir, "jsctl")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/jsctl")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/jsctl: %w: %s", err, out)
	}
	return bin, nil
}
