package commands_test

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rogpeppe/go-internal/testscript"
)

// cmdKVAdd creates a KV bucket (to test buckets that cannot hold ack
// records):
//
//	kv-add BUCKET [--history N] [--no-markers]
func cmdKVAdd(ts *testscript.TestScript, neg bool, args []string) {
	opts, pos := flagArgs(ts, args, "history")
	if neg || len(pos) != 1 {
		ts.Fatalf("usage: kv-add BUCKET [--history N] [--no-markers]")
	}
	cfg := jetstream.KeyValueConfig{Bucket: pos[0], History: uint8(optInt(ts, opts, "history", 1)), LimitMarkerTTL: time.Minute}
	if _, ok := opts["no-markers"]; ok {
		cfg.LimitMarkerTTL = 0
	}
	_, js := scriptJS(ts)
	ctx, cancel := scriptCtx()
	defer cancel()
	_, err := js.CreateKeyValue(ctx, cfg)
	ts.Check(err)
}

// cmdKVPut writes a raw value into a KV bucket (to corrupt an ack record):
//
//	kv-put BUCKET KEY VALUE
func cmdKVPut(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: kv-put BUCKET KEY VALUE")
	}
	_, js := scriptJS(ts)
	ctx, cancel := scriptCtx()
	defer cancel()
	kv, err := js.KeyValue(ctx, args[0])
	ts.Check(err)
	_, err = kv.PutString(ctx, args[1], args[2])
	ts.Check(err)
}
