package commands_test

import (
	"os"
	"regexp"

	"github.com/rogpeppe/go-internal/testscript"
)

var (
	maskRFC3339  = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	maskHuman    = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?( [A-Z]{3,5}\b)?`)
	maskClock    = regexp.MustCompile(`\b\d\d:\d\d:\d\d(\.\d+)?\b`)
	maskDuration = regexp.MustCompile(`[+-]?\b(\d+(\.\d+)?(ns|µs|us|ms|s|m|h))+\b`)
	maskColumns  = regexp.MustCompile(`(\S)  +`)
)

// maskTimes replaces times and durations, which differ from run to run,
// with fixed placeholders, and evens out table padding.
func maskTimes(s string) string {
	s = maskRFC3339.ReplaceAllString(s, "<TIME>")
	s = maskHuman.ReplaceAllString(s, "<TIME>")
	// A clock alone is a time too: tables print "14:31:38.604" for a time
	// today and add the date otherwise, so a run around midnight must mask
	// the same.
	s = maskClock.ReplaceAllString(s, "<TIME>")
	s = maskDuration.ReplaceAllString(s, "<DUR>")
	// Column widths follow the masked values: keep the indentation, and
	// turn every run of two or more blanks between columns into two.
	return maskColumns.ReplaceAllString(s, "$1  ")
}

// cmdMask writes SRC (stdout, stderr or a file) to DST with times and
// durations masked, so that `cmp DST want` compares the rest exactly (and
// -update rewrites want):
//
//	mask stdout|stderr|FILE DST
func cmdMask(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: mask stdout|stderr|FILE DST")
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(maskTimes(ts.ReadFile(args[0]))), 0o644))
}
