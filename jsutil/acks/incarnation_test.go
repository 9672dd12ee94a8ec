package acks_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go/jetstream"
)

// recreate deletes stream ORDERS and creates it again with consumer c.
func recreateOrders(t *testing.T, f fixture) jetstream.Consumer {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	if err := f.js.DeleteStream(ctx, "ORDERS"); err != nil {
		t.Fatal(err)
	}
	addStream(t, f.js, "ORDERS", 1)
	return addConsumer(t, f.js, "ORDERS", "c", 30*time.Second)
}

func hasWarning(ws []string, parts ...string) bool {
	for _, w := range ws {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(w, p)
		}
		if all {
			return true
		}
	}
	return false
}

// Finding 1: the floor and the sequence-keyed records of a deleted stream
// prove nothing about the stream created again under its name. Before,
// the second run was "processed 0, duplicates 5": every message
// below_floor (header keys) or a mismatch (sequence keys), the handler
// never ran. The stale ranges and records are reported and kept.
func TestRecreatedStreamRecordsProveNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []acks.ConsumeOption
	}{
		{"header keys", nil},
		{"sequence keys", []acks.ConsumeOption{acks.WithKey(mustSpec(t, "seq"))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := testCtx(t, 60*time.Second)
			publish(t, f.js, "orders", 1, 5, "Nats-Msg-Id", "first-%d")
			opts := append([]acks.ConsumeOption{acks.WithMaxMessages(5)}, tc.opts...)
			tl := newTally()
			sum, err := f.st.Consume(ctx, addConsumer(t, f.js, "ORDERS", "c", 30*time.Second), tl.handler(nil), opts...)
			if err != nil || sum.Processed != 5 || sum.Floor != 5 {
				t.Fatalf("first run: %+v %v", sum, err)
			}
			cons := recreateOrders(t, f)
			publish(t, f.js, "orders", 1, 5, "Nats-Msg-Id", "second-%d")

			// Compact must not take the dead stream's range as proof.
			if recs, err := f.st.Compactable(ctx, "ORDERS.c"); err != nil || len(recs) != 0 {
				t.Fatalf("compactable after the stream was recreated: %d records %v", len(recs), err)
			}
			// ... and says what it ignores: the range, and the records
			// keyed by the earlier stream's sequences.
			plan, err := f.st.PlanCompact(ctx, "ORDERS.c")
			wantStale := 0
			if tc.opts != nil {
				wantStale = 5
			}
			if err != nil || plan.Floor != 0 || len(plan.Records) != 0 || len(plan.Floors) != 1 || len(plan.Floors[0].Stale) != 1 || plan.StaleRecords != wantStale {
				t.Fatalf("compact plan after the stream was recreated: %+v %v", plan, err)
			}
			stats, err := f.st.Stats(ctx, "ORDERS.c")
			if err != nil || stats.Floor != 0 || len(stats.Floors) != 1 || len(stats.Floors[0].Stale) != 1 {
				t.Fatalf("stats: floor %d floors %+v %v", stats.Floor, stats.Floors, err)
			}

			tl = newTally()
			sum, err = f.st.Consume(ctx, cons, tl.handler(nil), opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("second run: processed %d, duplicates %d, warnings %q", sum.Processed, sum.Duplicates, sum.Warnings)
			if sum.Processed != 5 || sum.Duplicates != 0 {
				t.Fatalf("second run: processed %d duplicates %d, want 5 and 0", sum.Processed, sum.Duplicates)
			}
			tl.exactlyOnce(t, 5)
			if !hasWarning(sum.Warnings, "range (0, 5]", "scope \"ORDERS.c\"", "stream \"ORDERS\" was created") {
				t.Errorf("no warning naming the stale range: %q", sum.Warnings)
			}
			if tc.opts != nil && !hasWarning(sum.Warnings, "ack record", "before the stream was created") && !hasWarning(sum.Warnings, "ack record", "written for the stream created") {
				t.Errorf("no warning naming a stale record: %q", sum.Warnings)
			}
			// The stale range is kept, never trusted.
			fl, err := f.st.ReadFloor(ctx, acks.FloorRef{Scope: "ORDERS.c", Stream: "ORDERS", Consumer: "c"})
			if err != nil || len(fl.Ranges) != 2 || fl.Ranges[0].To != 5 || fl.Ranges[1].To != 5 {
				t.Fatalf("floor after the second run: %+v %v", fl, err)
			}
		})
	}
}

// Control: the stream kept, 5 more messages appended: all 10 run, once.
func TestKeptStreamFloorStillCovers(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t, 60*time.Second)
	publish(t, f.js, "orders", 1, 5, "Nats-Msg-Id", "first-%d")
	cons := addConsumer(t, f.js, "ORDERS", "c", 30*time.Second)
	tl := newTally()
	if sum, err := f.st.Consume(ctx, cons, tl.handler(nil), acks.WithMaxMessages(5)); err != nil || sum.Processed != 5 {
		t.Fatalf("first run: %+v %v", sum, err)
	}
	publish(t, f.js, "orders", 6, 5, "Nats-Msg-Id", "second-%d")
	sum, err := f.st.Consume(ctx, cons, tl.handler(nil), acks.WithMaxMessages(5))
	if err != nil || sum.Processed != 5 || len(sum.Warnings) != 0 {
		t.Fatalf("second run: %+v %v", sum, err)
	}
	tl.exactlyOnce(t, 10)
}

// A consumer deleted under a running Consume ends the run with an error
// naming it (before, the pulls were answered "no responders" and the run
// waited for ever).
func TestConsumeEndsWhenItsConsumerIsDeleted(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t, 60*time.Second)
	publish(t, f.js, "orders", 1, 1)
	cons := addConsumer(t, f.js, "ORDERS", "c", 30*time.Second)
	ran := make(chan struct{}, 1)
	type out struct {
		sum acks.Summary
		err error
	}
	done := make(chan out, 1)
	go func() {
		sum, err := f.st.Consume(ctx, cons, func(context.Context, acks.Delivery) error { ran <- struct{}{}; return nil })
		done <- out{sum, err}
	}()
	<-ran
	if err := f.js.DeleteConsumer(ctx, "ORDERS", "c"); err != nil {
		t.Fatal(err)
	}
	select {
	case o := <-done:
		t.Logf("consume ended: %v", o.err)
		if o.err == nil || !strings.Contains(o.err.Error(), `consumer "c"`) {
			t.Fatalf("consume ended with %v, want an error naming the consumer", o.err)
		}
	case <-ctx.Done():
		t.Fatal("consume did not end after its consumer was deleted")
	}
}

// A failed record of a deleted stream is of another message than the
// stream created again holds under its sequence: Retry does not run it
// (before, the new stream's message 3 ran under the old failure), and
// reports why, the record left as it is.
func TestRecreatedStreamFailedRecordIsNotRetried(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t, 60*time.Second)
	publish(t, f.js, "orders", 1, 5, "Nats-Msg-Id", "first-%d")
	tl := newTally()
	fail3 := func(d acks.Delivery) error {
		if d.Seq == 3 {
			return errors.New("db down")
		}
		return nil
	}
	if _, err := f.st.Consume(ctx, addConsumer(t, f.js, "ORDERS", "c", 30*time.Second), tl.handler(fail3),
		acks.WithMaxMessages(5), acks.WithMaxFailures(1), acks.WithKey(mustSpec(t, "seq"))); err != nil {
		t.Fatal(err)
	}
	failed, err := f.st.List(ctx, acks.Filter{Scope: "ORDERS.c", State: acks.StateFailed})
	if err != nil || len(failed) != 1 || failed[0].Seq != 3 || failed[0].Stale != "" {
		t.Fatalf("failed records of the first stream: %+v %v", failed, err)
	}
	recreateOrders(t, f)
	publish(t, f.js, "orders", 1, 5, "Nats-Msg-Id", "second-%d")

	ran := 0
	res, err := f.st.Retry(ctx, "ORDERS", failed, func(context.Context, acks.Delivery) error { ran++; return nil })
	if err != nil || len(res) != 1 {
		t.Fatalf("retry: %+v %v", res, err)
	}
	if ran != 0 || res[0].Action != acks.Failed || !strings.Contains(res[0].Stale, "proves nothing") || !errors.Is(res[0].Err, jsutil.ErrConflict) {
		t.Fatalf("retry of the earlier stream's record: ran %d, result %+v", ran, res[0])
	}
	after, err := f.st.List(ctx, acks.Filter{Scope: "ORDERS.c", State: acks.StateFailed})
	if err != nil || len(after) != 1 || after[0].Revision != failed[0].Revision || after[0].Stale == "" {
		t.Fatalf("the record was not left as it was: %+v %v", after, err)
	}
}
