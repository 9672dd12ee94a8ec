package commands_test

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rogpeppe/go-internal/testscript"
)

// cmdStreamMirror creates stream NAME mirroring ORIGIN and waits (at most
// a minute) until it holds as many messages as ORIGIN:
//
//	stream-mirror NAME ORIGIN
func cmdStreamMirror(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: stream-mirror NAME ORIGIN")
	}
	_, js := scriptJS(ts)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: args[0], Mirror: &jetstream.StreamSource{Name: args[1]}})
	ts.Check(err)
	origin, err := js.Stream(ctx, args[1])
	ts.Check(err)
	want := origin.CachedInfo().State.Msgs
	deadline := time.Now().Add(time.Minute)
	for {
		s, err := js.Stream(ctx, args[0])
		ts.Check(err)
		if s.CachedInfo().State.Msgs == want {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("stream-mirror: %s holds %d messages after a minute, want %d", args[0], s.CachedInfo().State.Msgs, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
