package commands_test

import (
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rogpeppe/go-internal/testscript"
)

// cmdConsumerRm deletes a consumer, as a plain client would:
//
//	consumer-rm STREAM NAME
func cmdConsumerRm(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: consumer-rm STREAM NAME")
	}
	_, js := scriptJS(ts)
	ctx, cancel := scriptCtx()
	defer cancel()
	ts.Check(js.DeleteConsumer(ctx, args[0], args[1]))
}

// cmdConsumerSetAckWait changes a consumer's ack wait with a plain update:
//
//	consumer-set-ack-wait STREAM NAME DURATION
func cmdConsumerSetAckWait(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: consumer-set-ack-wait STREAM NAME DURATION")
	}
	d, err := time.ParseDuration(args[2])
	ts.Check(err)
	_, js := scriptJS(ts)
	ctx, cancel := scriptCtx()
	defer cancel()
	c, err := js.Consumer(ctx, args[0], args[1])
	ts.Check(err)
	cfg := c.CachedInfo().Config
	cfg.AckWait = d
	_, err = js.UpdateConsumer(ctx, args[0], cfg)
	ts.Check(err)
}

// cmdMaskWho replaces this machine's USER@HOST in FILE with <WHO>, so
// golden output that names who took a snapshot compares everywhere:
//
//	mask-who FILE
func cmdMaskWho(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: mask-who FILE")
	}
	u, err := user.Current()
	ts.Check(err)
	host, err := os.Hostname()
	ts.Check(err)
	s := strings.ReplaceAll(ts.ReadFile(args[0]), u.Username+"@"+host, "<WHO>")
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(s), 0o644))
}

// cmdStreamPurge removes the messages of STREAM below sequence SEQ, so the
// stream's first message is SEQ:
//
//	stream-purge STREAM SEQ
func cmdStreamPurge(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: stream-purge STREAM SEQ")
	}
	seq, err := strconv.ParseUint(args[1], 10, 64)
	ts.Check(err)
	_, js := scriptJS(ts)
	ctx, cancel := scriptCtx()
	defer cancel()
	s, err := js.Stream(ctx, args[0])
	ts.Check(err)
	ts.Check(s.Purge(ctx, jetstream.WithPurgeSequence(seq)))
}
