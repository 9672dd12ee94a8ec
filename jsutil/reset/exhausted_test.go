package reset

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go/jetstream"
)

// TestPlanWarnsOfExhaustedMessages: message 1 used up max_deliver 2 (two
// naks, then the server gave up on it); a reset back to it warns that the
// change makes it deliverable again, with the count consumer info allows
// (exactly 1: nothing else awaits acknowledgement). A move past every
// delivered message does not warn.
func TestPlanWarnsOfExhaustedMessages(t *testing.T) {
	js := single(t)
	addStream(t, js, "EX", jetstream.LimitsPolicy, 1)
	publish(t, js, "ex.a", 5, 0)
	addConsumer(t, js, "EX", jetstream.ConsumerConfig{Durable: "w", AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 2})
	ctx := testCtx(t)
	cons, err := js.Consumer(ctx, "EX", "w")
	if err != nil {
		t.Fatal(err)
	}
	// Two deliveries of message 1, each refused; the next pull finds it
	// over its limit, and gets message 2 instead (acknowledged).
	var got []uint64
	for i := 0; i < 3; i++ {
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			md, _ := m.Metadata()
			got = append(got, md.Sequence.Stream)
			if md.Sequence.Stream == 1 {
				err = m.Nak()
			} else {
				err = m.DoubleAck(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if !slices.Equal(got, []uint64{1, 1, 2}) {
		t.Fatalf("deliveries %v, want 1, 1 (max_deliver 2), then 2", got)
	}
	testserver.WaitFor(t, 10*time.Second, "message 1 given up on", func() bool {
		ci := info(t, js, "EX", "w")
		return ci.NumAckPending == 0 && ci.NumRedelivered == 1 && ci.AckFloor.Stream == 2
	})

	c := mustPlan(t, js, "EX", []string{"w"}, Target{Kind: ToSeq, Seq: 1}, Options{}).Changes[0]
	if c.Exhausted == nil || *c.Exhausted != (Exhausted{MaxDeliver: 2, Known: true, AtLeast: 1, AtMost: 1}) {
		t.Errorf("exhausted = %+v, want max_deliver 2, known, exactly 1", c.Exhausted)
	}
	want := "1 message had used up max_deliver 2 and were given up on (the server reports 1 redelivered, 0 awaiting acknowledgement, not which ones); the change clears delivery counts, so those at or after sequence 1 will be delivered again, up to 2 times each"
	if !slices.Contains(c.Warnings, want) {
		t.Errorf("warnings %q lack %q", c.Warnings, want)
	}
	c = mustPlan(t, js, "EX", []string{"w"}, Target{Kind: ToSeq, Seq: 4}, Options{}).Changes[0]
	if c.Exhausted != nil || slices.ContainsFunc(c.Warnings, func(w string) bool { return strings.Contains(w, "max_deliver") }) {
		t.Errorf("a move past every delivered message: exhausted %+v, warnings %q; want neither", c.Exhausted, c.Warnings)
	}
}
