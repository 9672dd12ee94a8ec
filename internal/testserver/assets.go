package testserver

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// assetWait bounds the creation of one stream or consumer by the helpers
// below, retries included.
const assetWait = time.Minute

// AddStream creates a stream (CreateStream: sent again while a cluster
// cannot place it yet) and fails the test when it cannot.
func AddStream(t testing.TB, js jetstream.JetStream, cfg jetstream.StreamConfig) jetstream.Stream {
	t.Helper()
	s, err := CreateStream(Context(t, assetWait), js, cfg)
	if err != nil {
		t.Fatalf("create stream %s: %v", cfg.Name, err)
	}
	return s
}

// AddConsumer creates (or updates) a pull consumer of stream, and fails the
// test when it cannot.
func AddConsumer(t testing.TB, js jetstream.JetStream, stream string, cfg jetstream.ConsumerConfig) jetstream.Consumer {
	t.Helper()
	var c jetstream.Consumer
	err := askAgain(Context(t, assetWait), func(ctx context.Context) (err error) {
		c, err = js.CreateOrUpdateConsumer(ctx, stream, cfg)
		return err
	})
	if err != nil {
		t.Fatalf("create consumer %s on %s: %v", cfg.Durable, stream, err)
	}
	return c
}

// AddPushConsumer creates a push consumer (cfg.DeliverSubject set) of
// stream, and fails the test when it cannot.
func AddPushConsumer(t testing.TB, js jetstream.JetStream, stream string, cfg jetstream.ConsumerConfig) jetstream.PushConsumer {
	t.Helper()
	var c jetstream.PushConsumer
	err := askAgain(Context(t, assetWait), func(ctx context.Context) (err error) {
		c, err = js.CreatePushConsumer(ctx, stream, cfg)
		return err
	})
	if err != nil {
		t.Fatalf("create push consumer %s on %s: %v", cfg.Durable, stream, err)
	}
	return c
}

// askAgain runs req (each attempt bounded by 15s) until it succeeds, fails
// for good, or ctx ends. It asks again when the request went unanswered
// (no responders right after a stream's create or a leader change, a lost
// reply) or JetStream answered that it is not available yet (503): a
// create that is sent twice is harmless.
func askAgain(ctx context.Context, req func(context.Context) error) error {
	for {
		actx, cancel := context.WithTimeout(ctx, 15*time.Second)
		err := req(actx)
		cancel()
		var apiErr *jetstream.APIError
		again := errors.Is(err, nats.ErrNoResponders) || errors.Is(err, context.DeadlineExceeded) ||
			errors.Is(err, nats.ErrTimeout) || (errors.As(err, &apiErr) && apiErr.Code == 503)
		if err == nil || !again || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}
