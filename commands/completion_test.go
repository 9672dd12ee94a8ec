package commands_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jsctl/jsctl/commands"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rogpeppe/go-internal/testscript"
)

// completionShells are the shells with a script under completions/.
var completionShells = []string{"bash", "zsh", "fish"}

// TestCompletionScriptsUpToDate fails when a script under completions/
// differs from `jsctl completion SHELL`. The -update flag of this package
// (the one that rewrites golden sections) rewrites them:
//
//	go test ./commands -run TestCompletionScriptsUpToDate -update
func TestCompletionScriptsUpToDate(t *testing.T) {
	for _, sh := range completionShells {
		var out, errb bytes.Buffer
		if code := commands.Run(context.Background(), []string{"completion", sh}, nil, &out, &errb, false); code != 0 {
			t.Fatalf("jsctl completion %s: exit %d: %s", sh, code, errb.String())
		}
		path := filepath.Join("..", "completions", "jsctl."+sh)
		if *update {
			if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		have, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run: go test ./commands -run TestCompletionScriptsUpToDate -update)", err)
		}
		if !bytes.Equal(have, out.Bytes()) {
			t.Errorf("%s is out of date (run: go test ./commands -run TestCompletionScriptsUpToDate -update)", path)
		}
	}
}

// cmdCompletionConsumerAdd creates durable pull consumers on a stream:
//
//	completion-consumer-add STREAM NAME...
func cmdCompletionConsumerAdd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: completion-consumer-add STREAM NAME...")
	}
	_, js := scriptJS(ts)
	ctx, cancel := scriptCtx()
	defer cancel()
	s, err := js.Stream(ctx, args[0])
	ts.Check(err)
	for _, name := range args[1:] {
		_, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy})
		ts.Check(err)
	}
}

// cmdCompletionAcksAdd gives SCOPE an ack record in the default bucket by
// processing the next message of a durable pull consumer with a handler
// that succeeds:
//
//	completion-acks-add STREAM CONSUMER SCOPE
func cmdCompletionAcksAdd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: completion-acks-add STREAM CONSUMER SCOPE")
	}
	_, js := scriptJS(ts)
	ctx, cancel := scriptCtx()
	defer cancel()
	st, err := acks.Open(ctx, js)
	ts.Check(err)
	cons, err := js.Consumer(ctx, args[0], args[1])
	ts.Check(err)
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
	ts.Check(err)
	n := 0
	for msg := range batch.Messages() {
		n++
		_, err := st.Process(ctx, msg, func(context.Context, acks.Delivery) error { return nil }, acks.WithScope(acks.ScopeName(args[2])))
		ts.Check(err)
	}
	ts.Check(batch.Error())
	if n == 0 {
		ts.Fatalf("completion-acks-add: no message to process on %s/%s", args[0], args[1])
	}
}
