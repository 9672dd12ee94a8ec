package commands_test

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/rogpeppe/go-internal/testscript"
)

// cmdAcksWait polls the ack bucket until scope holds exactly N records (the
// server's TTL removes them), for at most 30s:
//
//	acks-wait SCOPE N
func cmdAcksWait(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: acks-wait SCOPE N")
	}
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	_, js := scriptJS(ts)
	ctx, cancel := scriptCtx()
	defer cancel()
	st, err := acks.OpenExisting(ctx, js, acks.DefaultBucket)
	ts.Check(err)
	n := -1
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		recs, err := st.List(ctx, acks.Filter{Scope: acks.ScopeName(args[0])})
		ts.Check(err)
		if n = len(recs); n == want {
			return
		}
	}
	ts.Fatalf("acks-wait: scope %s holds %d records after 30s, want %d", args[0], n, want)
}

// cmdStreamMsg prints message SEQ of STREAM as a plain client reads it:
// its subject, its headers sorted ("H: Name: value", one line per value;
// --skip leaves a header out) and its payload ("D: payload", quoted as Go
// quotes strings):
//
//	stream-msg STREAM SEQ [--skip HEADER]...
func cmdStreamMsg(ts *testscript.TestScript, neg bool, args []string) {
	opts, args := flagArgs(ts, args, "skip")
	if len(args) != 2 {
		ts.Fatalf("usage: stream-msg STREAM SEQ [--skip HEADER]...")
	}
	seq, err := strconv.ParseUint(args[1], 10, 64)
	ts.Check(err)
	_, js := scriptJS(ts)
	ctx, cancel := scriptCtx()
	defer cancel()
	s, err := js.Stream(ctx, args[0])
	ts.Check(err)
	m, err := s.GetMsg(ctx, seq)
	if neg {
		if err == nil {
			ts.Fatalf("stream-msg: stream %s has message %d", args[0], seq)
		}
		return
	}
	ts.Check(err)
	var lines []string
	for k, vs := range m.Header {
		if slices.Contains(opts["skip"], k) {
			continue
		}
		for _, v := range vs {
			lines = append(lines, fmt.Sprintf("H: %s: %s", k, v))
		}
	}
	sort.Strings(lines)
	fmt.Fprintf(ts.Stdout(), "S: %s\n%s\nD: %s\n", m.Subject, strings.Join(lines, "\n"), strconv.Quote(string(m.Data)))
}
