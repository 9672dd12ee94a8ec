package commands_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/nats-io/nats.go"
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
// recreate too (killed before the record was completed); --paused makes it a
// change made with --pause, killed after it paused the consumer.
//
//	consumer-intent STREAM CONSUMER --to-seq N [--method recreate|reset] [--id ID] [--delete|--done] [--paused]
func cmdConsumerIntent(ts *testscript.TestScript, neg bool, args []string) {
	opts, pos := flagArgs(ts, args, "to-seq", "method", "id")
	if neg || len(pos) != 2 || opts["to-seq"] == nil {
		ts.Fatalf("usage: consumer-intent STREAM CONSUMER --to-seq N [--method recreate|reset] [--id ID] [--delete|--done] [--paused]")
	}
	nc, js := scriptJS(ts)
	ctx, cancel := scriptCtx()
	defer cancel()
	_, del := opts["delete"]
	_, done := opts["done"]
	_, paused := opts["paused"]
	ts.Check(writeIntent(ctx, nc, js, intentSpec{
		stream: pos[0], consumer: pos[1], seq: uint64(optInt(ts, opts, "to-seq", 0)),
		method: reset.Method(optStr(opts, "method", "recreate")), id: optStr(opts, "id", "c0ffee"),
		deleteConsumer: del || done, recreate: done, paused: paused,
	}))
}

// intentSpec is a change left unfinished, as a killed jsctl leaves it.
type intentSpec struct {
	stream, consumer string
	seq              uint64
	method           reset.Method
	id               string
	// deleteConsumer deletes the consumer after writing the intent (a
	// recreate killed after its delete); recreate then creates it with the
	// new configuration (killed before recording it).
	deleteConsumer, recreate bool
	// paused makes it a change made with --pause, which paused the
	// consumer (until resumed) after writing the intent.
	paused bool
}

// writeIntent writes the intent record of an unfinished change of an
// existing consumer, and deletes or recreates the consumer as spec says.
func writeIntent(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, spec intentSpec) error {
	stream, name := spec.stream, spec.consumer
	msg, err := nc.Request(fmt.Sprintf("$JS.API.CONSUMER.INFO.%s.%s", stream, name), nil, 5*time.Second)
	if err != nil {
		return err
	}
	var raw struct {
		Config json.RawMessage `json:"config"`
	}
	if err := json.Unmarshal(msg.Data, &raw); err != nil {
		return err
	}
	var info jetstream.ConsumerInfo
	if err := json.Unmarshal(msg.Data, &info); err != nil {
		return err
	}
	created := info.Created.UTC()
	in := reset.Intent{
		ID: spec.id, Stream: stream, Consumer: name, Method: spec.method,
		Target: reset.Target{Kind: reset.ToSeq, Seq: spec.seq}, Config: raw.Config, Created: &created,
		From: reset.From{Delivered: info.Delivered.Stream, AckFloor: info.AckFloor.Stream},
		To:   reset.To{Sequence: spec.seq}, Time: time.Now().UTC(), User: "ops", Host: "box",
	}
	until := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	if spec.paused {
		in.Pause = &reset.PauseIntent{Until: until, Resume: true}
	}
	var newCfg map[string]any
	if in.Method == reset.Recreate {
		if err := json.Unmarshal(raw.Config, &newCfg); err != nil {
			return err
		}
		if md, ok := newCfg["metadata"].(map[string]any); ok {
			for k := range md {
				if strings.HasPrefix(k, "_nats.") {
					delete(md, k)
				}
			}
		}
		delete(newCfg, "opt_start_time")
		newCfg["deliver_policy"], newCfg["opt_start_seq"] = "by_start_sequence", spec.seq
		if spec.paused {
			newCfg["pause_until"] = until
		}
		if in.NewConfig, err = json.Marshal(newCfg); err != nil {
			return err
		}
	}
	kv, err := js.KeyValue(ctx, reset.IntentBucket) // made by an earlier jsctl run
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: reset.IntentBucket, History: 1})
	}
	if err != nil {
		return err
	}
	val, err := json.Marshal(in)
	if err != nil {
		return err
	}
	if _, err := kv.Create(ctx, reset.HistoryKey(stream, name), val); err != nil {
		return err
	}
	if spec.paused {
		if _, err := js.PauseConsumer(ctx, stream, name, until); err != nil {
			return err
		}
	}
	if spec.deleteConsumer {
		if err := js.DeleteConsumer(ctx, stream, name); err != nil {
			return err
		}
	}
	if spec.recreate {
		body, err := json.Marshal(map[string]any{"stream_name": stream, "config": newCfg, "action": "create"})
		if err != nil {
			return err
		}
		msg, err := nc.Request(fmt.Sprintf("$JS.API.CONSUMER.CREATE.%s.%s", stream, name), body, 5*time.Second)
		if err != nil {
			return err
		}
		if strings.Contains(string(msg.Data), `"error"`) {
			return fmt.Errorf("create: %s", msg.Data)
		}
	}
	return nil
}
