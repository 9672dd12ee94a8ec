package commands_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rogpeppe/go-internal/testscript"
)

// cmdConsumerIntent leaves behind what a `consumer reset --execute` killed
// in the middle leaves: an intent record in JSCTL_RESET_INTENTS for a
// change of CONSUMER to next delivery N, made as the reset command makes it
// (the consumer's raw configuration, position and creation time; for a
// recreate, the configuration it creates, starting by sequence N), by
// ops@box with change id ID (default "c0ffee"). --delete then deletes the
// consumer (killed between the delete and the create); --done makes the
// recreate too (killed before the record was completed).
//
//	consumer-intent STREAM CONSUMER --to-seq N [--method recreate|reset] [--id ID] [--delete|--done]
func cmdConsumerIntent(ts *testscript.TestScript, neg bool, args []string) {
	opts, pos := flagArgs(ts, args, "to-seq", "method", "id")
	if neg || len(pos) != 2 || opts["to-seq"] == nil {
		ts.Fatalf("usage: consumer-intent STREAM CONSUMER --to-seq N [--method recreate|reset] [--id ID] [--delete|--done]")
	}
	stream, name := pos[0], pos[1]
	seq := uint64(optInt(ts, opts, "to-seq", 0))
	nc, js := scriptJS(ts)
	ctx, cancel := scriptCtx()
	defer cancel()
	msg, err := nc.Request(fmt.Sprintf("$JS.API.CONSUMER.INFO.%s.%s", stream, name), nil, 5*time.Second)
	ts.Check(err)
	var raw struct {
		Config json.RawMessage `json:"config"`
	}
	ts.Check(json.Unmarshal(msg.Data, &raw))
	var info jetstream.ConsumerInfo
	ts.Check(json.Unmarshal(msg.Data, &info))
	created := info.Created.UTC()
	in := reset.Intent{
		ID: optStr(opts, "id", "c0ffee"), Stream: stream, Consumer: name, Method: reset.Method(optStr(opts, "method", "recreate")),
		Target: reset.Target{Kind: reset.ToSeq, Seq: seq}, Config: raw.Config, Created: &created,
		From: reset.From{Delivered: info.Delivered.Stream, AckFloor: info.AckFloor.Stream},
		To:   reset.To{Sequence: seq}, Time: time.Now().UTC(), User: "ops", Host: "box",
	}
	var newCfg map[string]any
	if in.Method == reset.Recreate {
		ts.Check(json.Unmarshal(raw.Config, &newCfg))
		if md, ok := newCfg["metadata"].(map[string]any); ok {
			for k := range md {
				if strings.HasPrefix(k, "_nats.") {
					delete(md, k)
				}
			}
		}
		delete(newCfg, "opt_start_time")
		newCfg["deliver_policy"], newCfg["opt_start_seq"] = "by_start_sequence", seq
		in.NewConfig, err = json.Marshal(newCfg)
		ts.Check(err)
	}
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: reset.IntentBucket, History: 1})
	ts.Check(err)
	val, err := json.Marshal(in)
	ts.Check(err)
	_, err = kv.Create(ctx, reset.HistoryKey(stream, name), val)
	ts.Check(err)
	_, del := opts["delete"]
	_, done := opts["done"]
	if del || done {
		ts.Check(js.DeleteConsumer(ctx, stream, name))
	}
	if done {
		body, err := json.Marshal(map[string]any{"stream_name": stream, "config": newCfg, "action": "create"})
		ts.Check(err)
		msg, err := nc.Request(fmt.Sprintf("$JS.API.CONSUMER.CREATE.%s.%s", stream, name), body, 5*time.Second)
		ts.Check(err)
		if strings.Contains(string(msg.Data), `"error"`) {
			ts.Fatalf("consumer-intent: create: %s", msg.Data)
		}
	}
}
