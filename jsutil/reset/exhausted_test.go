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
// (exactly 1: nothing else awaits acknowledgement). A move past the last
// message does not warn.
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
	// Message 1 is refused at each of its two deliveries; every other
	// message is acknowledged. Pulls go on until the server has given up
	// on message 1 (it finds it over its limit at a pull after the second
	// refusal).
	ones := 0
	testserver.WaitFor(t, 20*time.Second, "message 1 given up on", func() bool {
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(200*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			md, _ := m.Metadata()
			if md.Sequence.Stream == 1 {
				ones++
				err = m.Nak()
			} else {
				err = m.DoubleAck(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		ci := info(t, js, "EX", "w")
		return ones == 2 && ci.NumAckPending == 0 && ci.NumRedelivered == 1 && ci.AckFloor.Stream >= 2
	})
	if ones != 2 {
		t.Fatalf("message 1 delivered %d times, want 2 (max_deliver 2)", ones)
	}

	c := mustPlan(t, js, "EX", []string{"w"}, Target{Kind: ToSeq, Seq: 1}, Options{}).Changes[0]
	if c.Exhausted == nil || *c.Exhausted != (Exhausted{MaxDeliver: 2, Known: true, AtLeast: 1, AtMost: 1}) {
		t.Errorf("exhausted = %+v, want max_deliver 2, known, exactly 1", c.Exhausted)
	}
	want := "1 message had used up max_deliver 2 (the server reports 1 redelivered, 0 awaiting acknowledgement, not which ones); the change clears delivery counts, so those at or after sequence 1 will be delivered again, up to 2 times each"
	if !slices.Contains(c.Warnings, want) {
		t.Errorf("warnings %q lack %q", c.Warnings, want)
	}
	c = mustPlan(t, js, "EX", []string{"w"}, Target{Kind: ToSeq, Seq: 6}, Options{}).Changes[0]
	if c.Exhausted != nil || slices.ContainsFunc(c.Warnings, func(w string) bool { return strings.Contains(w, "max_deliver") }) {
		t.Errorf("a move past every delivered message: exhausted %+v, warnings %q; want neither", c.Exhausted, c.Warnings)
	}
}
