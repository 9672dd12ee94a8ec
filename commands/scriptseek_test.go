package commands_test

import (
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdHumanTime sets OUT to the time in variable IN (RFC 3339, as the pub and
// msgtime commands record it) formatted as jsctl prints times for people
// with JSCTL_TZ=UTC, so golden output can hold it via cmpenv:
//
//	humantime IN OUT
func cmdHumanTime(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: humantime IN OUT")
	}
	t, err := time.Parse(time.RFC3339Nano, ts.Getenv(args[0]))
	if err != nil {
		ts.Fatalf("humantime: $%s: %v", args[0], err)
	}
	ts.Setenv(args[1], t.UTC().Format("2006-01-02 15:04:05.000000000 MST"))
}
