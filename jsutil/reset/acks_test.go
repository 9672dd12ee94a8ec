package reset

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go/jetstream"
)

// TestForgetAcks: the plan counts the ack records of the replayed range;
// --forget-acks deletes them so the replay runs the handler again.
func TestForgetAcks(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 6, 0)
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "billing"})
	store, err := acks.Open(testCtx(t), js)
	if err != nil {
		t.Fatal(err)
	}
	cons, _ := js.Consumer(testCtx(t), "ORDERS", "billing")
	b, err := cons.Fetch(5, jetstream.FetchMaxWait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range b.Messages() {
		if _, err := store.Process(testCtx(t), m, func(context.Context, acks.Delivery) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	testserver.WaitFor(t, 10*time.Second, "ack floor 5", func() bool { return info(t, js, "ORDERS", "billing").AckFloor.Stream == 5 })

	p := mustPlan(t, js, "ORDERS", []string{"billing"}, Target{Kind: ToSeq, Seq: 2}, Options{})
	if c := p.Changes[0]; c.AckRecordsInRange != 4 || len(c.Warnings) != 1 {
		t.Fatalf("plan: %d records, warnings %v", c.AckRecordsInRange, c.Warnings)
	}
	// Another scope has none.
	p = mustPlan(t, js, "ORDERS", []string{"billing"}, Target{Kind: ToSeq, Seq: 2}, Options{AcksScope: "shared"})
	if c := p.Changes[0]; c.AckRecordsInRange != 0 {
		t.Fatalf("other scope: %d records", c.AckRecordsInRange)
	}
	// Killed right after writing its intent: nothing forgotten yet, and
	// recover forgets the range before it moves the consumer.
	opts := Options{ForgetAcks: true, crash: func(s string) bool { return s == "intent" }}
	p = mustPlan(t, js, "ORDERS", []string{"billing"}, Target{Kind: ToSeq, Seq: 3}, opts)
	if err := Execute(testCtx(t), js, p, opts); err == nil {
		t.Fatal("no simulated crash")
	}
	scope := acks.DefaultScope("ORDERS", "billing")
	if n, _ := store.CountRange(testCtx(t), scope, 1, 10); n != 5 {
		t.Fatalf("%d records before recover, want 5", n)
	}
	r, err := PlanRecover(testCtx(t), js, "ORDERS", nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ExecuteRecover(testCtx(t), js, r, Options{}); err != nil {
		t.Fatal(err)
	}
	if n, _ := store.CountRange(testCtx(t), scope, 1, 10); n != 2 {
		t.Fatalf("%d records after recover, want 2 (sequences 1 and 2)", n)
	}

	opts = Options{ForgetAcks: true}
	p = mustRun(t, js, "ORDERS", []string{"billing"}, Target{Kind: ToSeq, Seq: 2}, opts)
	if c := p.Changes[0]; c.AckRecordsInRange != 1 || c.AckRecordsForgotten != 1 || len(c.Warnings) != 0 {
		t.Fatalf("execute: %+v", c)
	}
	if n, err := store.CountRange(testCtx(t), scope, 1, 10); err != nil || n != 1 {
		t.Fatalf("left %d records (%v), want 1 (sequence 1)", n, err)
	}
	// A missing bucket counts nothing.
	p = mustPlan(t, js, "ORDERS", []string{"billing"}, Target{Kind: ToSeq, Seq: 1}, Options{AcksBucket: "NOPE"})
	if p.Changes[0].AckRecordsInRange != 0 {
		t.Fatal("records counted in a missing bucket")
	}
}

// TestForwardMoveNotedInFloor: an in-place move forward past unhandled
// messages opens a new range in the consumer's floor, so a consume run that
// was going on across the move (a forced reset) never counts the skipped
// messages as handled when it next advances the floor. A move that recover
// finishes (the run died after writing its intent) is noted the same way.
func TestForwardMoveNotedInFloor(t *testing.T) {
	for _, recovered := range []bool{false, true} {
		t.Run(map[bool]string{false: "execute", true: "recover"}[recovered], func(t *testing.T) {
			js := single(t)
			addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
			publish(t, js, "orders.eu", 20, 0)
			addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "billing"})
			store, err := acks.Open(testCtx(t), js)
			if err != nil {
				t.Fatal(err)
			}
			cons, _ := js.Consumer(testCtx(t), "ORDERS", "billing")
			ok := func(context.Context, acks.Delivery) error { return nil }
			if _, err := store.Consume(testCtx(t), cons, ok, acks.WithMaxMessages(5)); err != nil {
				t.Fatal(err)
			}
			target := Target{Kind: ToSeq, Seq: 16}
			if !recovered {
				mustRun(t, js, "ORDERS", []string{"billing"}, target, Options{Force: true})
			} else {
				opts := Options{Force: true, crash: func(s string) bool { return s == "intent" }}
				p := mustPlan(t, js, "ORDERS", []string{"billing"}, target, opts)
				if err := Execute(testCtx(t), js, p, opts); !errors.Is(err, errCrashed) {
					t.Fatalf("execute: %v", err)
				}
				r, err := PlanRecover(testCtx(t), js, "ORDERS", nil, Options{})
				if err != nil {
					t.Fatal(err)
				}
				if err := ExecuteRecover(testCtx(t), js, r, Options{}); err != nil || !r.Changes[0].Done || r.Changes[0].Action != ActReset {
					t.Fatalf("recover: %v %+v", err, r.Changes[0])
				}
			}
			// A run going on across the move advances the floor to the new
			// ack floor, as it does every second.
			ref := acks.FloorRef{Scope: acks.DefaultScope("ORDERS", "billing"), Stream: "ORDERS", Consumer: "billing"}
			fl, _, err := store.AdvanceFloor(testCtx(t), ref, info(t, js, "ORDERS", "billing"))
			if err != nil {
				t.Fatal(err)
			}
			for seq := uint64(6); seq <= 15; seq++ {
				if fl.Covers(seq, "orders.eu") {
					t.Fatalf("the floor covers skipped message %d: %+v", seq, fl.Ranges)
				}
			}
			if !fl.Covers(3, "orders.eu") {
				t.Errorf("the floor lost handled messages: %+v", fl.Ranges)
			}
		})
	}
}

// TestForgetAcksReportsEarlierStreamRecords: the stream deleted and created
// again (its consumer added again, nothing delivered), the sequence-keyed
// records of the first are reported by the --forget-acks plan, naming the
// scope and both creation times, and neither counted nor forgotten. Before,
// nothing being replayed, the plan said nothing of them.
func TestForgetAcksReportsEarlierStreamRecords(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 4, 0)
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "billing"})
	store, err := acks.Open(testCtx(t), js)
	if err != nil {
		t.Fatal(err)
	}
	cons, _ := js.Consumer(testCtx(t), "ORDERS", "billing")
	ok := func(context.Context, acks.Delivery) error { return nil }
	seq, err := acks.ParseKeySpec("seq")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Consume(testCtx(t), cons, ok, acks.WithMaxMessages(4), acks.WithKey(seq)); err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(testCtx(t), "ORDERS"); err != nil {
		t.Fatal(err)
	}
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 2, 0)
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "billing"})

	opts := Options{ForgetAcks: true}
	p := mustRun(t, js, "ORDERS", []string{"billing"}, Target{Kind: ToSeq, Seq: 1}, opts)
	c := p.Changes[0]
	if c.AckRecordsInRange != 0 || c.AckRecordsForgotten != 0 || len(c.Warnings) != 1 {
		t.Fatalf("plan: %d records, %d forgotten, warnings %q", c.AckRecordsInRange, c.AckRecordsForgotten, c.Warnings)
	}
	w := c.Warnings[0]
	for _, part := range []string{`scope "ORDERS.billing"`, "was written for the stream created", `stream "ORDERS" was created`, "proves nothing", "and 3 more such records, of messages 1 to 4", "not forgotten"} {
		if !strings.Contains(w, part) {
			t.Errorf("warning lacks %q: %s", part, w)
		}
	}
	recs, err := store.List(testCtx(t), acks.Filter{Scope: "ORDERS.billing"})
	if err != nil || len(recs) != 4 {
		t.Fatalf("the earlier stream's records were not kept: %d %v", len(recs), err)
	}
}
