package acks_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go/jetstream"
)

// TestLibraryOnlyOptions covers the options that jsctl's commands do not
// use but library users do: a key function, MaxDeliver for Process, and
// the marker TTL of a bucket Open creates.
func TestLibraryOnlyOptions(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t, 30*time.Second)

	// WithKeyFunc: the payload is the key; the second message with the
	// same payload is a duplicate, and the record names the function.
	pubJSON(t, f.js, "orders.1", "same")
	pubJSON(t, f.js, "orders.2", "same")
	cons := addConsumer(t, f.js, "ORDERS", "byfunc", 30*time.Second)
	byPayload := acks.WithKeyFunc("payload", func(m jetstream.Msg) (string, error) { return string(m.Data()), nil })
	first, err := f.st.Process(ctx, next(t, cons), func(context.Context, acks.Delivery) error { return nil }, byPayload)
	if err != nil || first.Action != acks.Processed || first.Key != "same" || first.KeySpec != "payload" {
		t.Fatalf("first: %+v %v", first, err)
	}
	second, err := f.st.Process(ctx, next(t, cons), func(context.Context, acks.Delivery) error { t.Error("ran a duplicate"); return nil }, byPayload)
	if err != nil || second.Action != acks.Duplicate {
		t.Fatalf("second: %+v %v", second, err)
	}

	// WithMaxDeliver: a handler failing on the last allowed delivery
	// leaves a failed record and the message is terminated.
	pubJSON(t, f.js, "orders.3", "fails")
	last := addConsumer(t, f.js, "ORDERS", "maxdeliver", 30*time.Second, func(c *jetstream.ConsumerConfig) {
		c.FilterSubject = "orders.3"
	})
	r, err := f.st.Process(ctx, next(t, last), func(context.Context, acks.Delivery) error { return errors.New("boom") }, acks.WithMaxDeliver(1))
	if r.Action != acks.Failed {
		t.Fatalf("max deliver 1: %+v %v, want failed", r, err)
	}

	// WithMarkerTTL: the bucket Open creates keeps markers that long.
	if _, err := acks.Open(ctx, f.js, acks.WithBucket("MARKERS"), acks.WithMarkerTTL(7*time.Second)); err != nil {
		t.Fatal(err)
	}
	st, err := f.js.Stream(ctx, "KV_MARKERS")
	if err != nil || st.CachedInfo().Config.SubjectDeleteMarkerTTL != 7*time.Second {
		t.Fatalf("marker TTL: %v %v, want 7s", st.CachedInfo().Config.SubjectDeleteMarkerTTL, err)
	}
}
