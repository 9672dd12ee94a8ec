package commands_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rogpeppe/go-internal/testscript"
)

// cmdStreamReplica creates a mirror or a sourcing stream:
//
//	stream-replica NAME (--mirror ORIGIN | --source ORIGIN[:FILTER[:DEST]]...) [--max-msgs N] [--discard-new]
//
// A source's FILTER keeps those origin subjects; with DEST they are
// rewritten by a subject transform (FILTER → DEST).
func cmdStreamReplica(ts *testscript.TestScript, neg bool, args []string) {
	opts, pos := flagArgs(ts, args, "mirror", "source", "max-msgs")
	_, mirror := opts["mirror"]
	if neg || len(pos) != 1 || mirror == (len(opts["source"]) > 0) {
		ts.Fatalf("usage: stream-replica NAME (--mirror ORIGIN | --source ORIGIN[:FILTER[:DEST]]...) [--max-msgs N] [--discard-new]")
	}
	cfg := jetstream.StreamConfig{Name: pos[0], MaxMsgs: int64(optInt(ts, opts, "max-msgs", -1))}
	if _, ok := opts["discard-new"]; ok {
		cfg.Discard = jetstream.DiscardNew
	}
	if mirror {
		cfg.Mirror = &jetstream.StreamSource{Name: optStr(opts, "mirror", "")}
	}
	for _, s := range opts["source"] {
		f := strings.SplitN(s, ":", 3)
		src := &jetstream.StreamSource{Name: f[0]}
		switch len(f) {
		case 2:
			src.FilterSubject = f[1]
		case 3:
			src.SubjectTransforms = []jetstream.SubjectTransformConfig{{Source: f[1], Destination: f[2]}}
		}
		cfg.Sources = append(cfg.Sources, src)
	}
	_, js := scriptJS(ts)
	ctx, cancel := scriptCtx()
	defer cancel()
	_, err := testserver.CreateStream(ctx, js, cfg)
	ts.Check(err)
}

// cmdStreamWaitMsgs waits (at most 30s) until a stream holds N messages:
//
//	stream-wait-msgs NAME N
func cmdStreamWaitMsgs(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: stream-wait-msgs NAME N")
	}
	var n uint64
	if _, err := fmt.Sscan(args[1], &n); err != nil {
		ts.Fatalf("stream-wait-msgs: N: %v", err)
	}
	_, js := scriptJS(ts)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := scriptCtx()
		s, err := js.Stream(ctx, args[0])
		cancel()
		ts.Check(err)
		got := s.CachedInfo().State.Msgs
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("stream-wait-msgs: %s holds %d messages after 30s, want %d", args[0], got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
