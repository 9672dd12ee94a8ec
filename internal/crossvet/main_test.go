package main

import (
	"strings"
	"testing"
)

// A package that calls a Unix-only function outside a _unix.go file
// passes on Linux and fails for Windows; a vet finding in a Windows-only
// file is reported for Windows only.
func TestCrossvetFindsWhatOnlyATargetSees(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the standard library from source")
	}
	for _, c := range []struct {
		dir, target string
		want        []string
	}{
		{"unixonly", "linux/arm64", nil},
		{"unixonly", "windows/amd64", []string{"stop.go:6:43: undefined: syscall.Kill"}},
		{"vetwindows", "darwin/arm64", nil},
		{"vetwindows", "windows/arm64", []string{"name_windows.go:6:42: fmt.Sprintf format %d has arg \"x\" of wrong type string (printf)"}},
	} {
		var out strings.Builder
		n, err := check("testdata/"+c.dir, c.target, &out)
		if err != nil {
			t.Fatalf("%s %s: %v", c.dir, c.target, err)
		}
		if len(c.want) == 0 && n != 0 {
			t.Errorf("%s: %d problems, want none:\n%s", c.target, n, out.String())
		}
		if len(c.want) > 0 && n == 0 {
			t.Errorf("%s: no problems, want %q", c.target, c.want)
		}
		for _, w := range c.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: output lacks %q:\n%s", c.target, w, out.String())
			}
		}
	}
	if _, err := check(".", "windows", &strings.Builder{}); err == nil {
		t.Error("a target without GOARCH: no error")
	}
}
