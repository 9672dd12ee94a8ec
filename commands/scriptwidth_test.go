package commands_test

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdFits: fits N stdout|stderr fails when a line of the last command's
// output is wider than N columns, naming it; it logs the widest line.
func cmdFits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 || (args[1] != "stdout" && args[1] != "stderr") {
		ts.Fatalf("usage: fits COLUMNS stdout|stderr")
	}
	width, err := strconv.Atoi(args[0])
	ts.Check(err)
	text := ts.ReadFile(args[1])
	if strings.TrimSpace(text) == "" {
		ts.Fatalf("fits: %s is empty", args[1])
	}
	widest := 0
	var wide []string
	for _, l := range strings.Split(text, "\n") {
		n := utf8.RuneCountInString(l)
		widest = max(widest, n)
		if n > width {
			wide = append(wide, strconv.Itoa(n)+": "+l)
		}
	}
	ts.Logf("widest line: %d columns", widest)
	if len(wide) > 0 {
		ts.Fatalf("%d lines wider than %d columns:\n%s", len(wide), width, strings.Join(wide, "\n"))
	}
}
