package acks_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil/acks"
)

// WithMaxMessages is exact: the handler never sees more than N messages,
// in any mode. Each run stops by itself at N (no cancel), on a stream
// with more messages than that; the counting race this guards against
// (a finished message leaving the in-flight count before it was counted
// as handled, so the fetcher saw room for one more) shows in a few runs of
// many.
func TestMaxMessagesExact(t *testing.T) {
	js := newJS(t, testserver.Start(t))
	addStream(t, js, "ORDERS", 1)
	publish(t, js, "orders", 1, 60)
	publish(t, js, "audit", 1, 60)
	st, err := acks.Open(testCtx(t, 30*time.Second), js)
	if err != nil {
		t.Fatal(err)
	}
	const limit = 23
	modes := []struct {
		name    string
		batch   int
		workers int
		records bool
	}{
		{"message", 0, 1, false},
		{"message-workers", 0, 4, false},
		{"message-records", 0, 4, true},
		{"batch", 5, 1, false},
		{"batch-workers", 5, 3, false},
		{"batch-records", 5, 3, true},
	}
	runs := 5
	if testing.Short() {
		runs = 3
	}
	for _, m := range modes {
		for i := range runs {
			name := fmt.Sprintf("%s-%d", m.name, i)
			cons := addConsumer(t, js, "ORDERS", name, 30*time.Second)
			var n atomic.Int64
			opts := []acks.ConsumeOption{acks.WithWorkers(m.workers), acks.WithMaxMessages(limit), acks.WithScope("max." + name)}
			if !m.records {
				opts = append(opts, acks.WithIdempotentSubjects("none.>"))
			}
			ctx := testCtx(t, 60*time.Second)
			var sum acks.Summary
			if m.batch > 0 {
				opts = append(opts, acks.WithBatch(m.batch, 0))
				sum, err = st.ConsumeBatch(ctx, cons, func(_ context.Context, ds []acks.Delivery) ([]error, error) {
					n.Add(int64(len(ds)))
					return nil, nil
				}, opts...)
			} else {
				sum, err = st.Consume(ctx, cons, func(context.Context, acks.Delivery) error {
					n.Add(1)
					return nil
				}, opts...)
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if n.Load() != limit || sum.Processed != limit {
				t.Errorf("%s: the handler got %d messages and %d were processed, want exactly %d", name, n.Load(), sum.Processed, limit)
			}
		}
	}
}
