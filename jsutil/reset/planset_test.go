package reset

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// TestPlanSetRoundTrip: the plans of two streams written as one document
// read back as the same two plans; a single plan reads as one.
func TestPlanSetRoundTrip(t *testing.T) {
	js := single(t)
	for _, s := range []string{"ORDERS", "PAYMENTS"} {
		addStream(t, js, s, jetstream.LimitsPolicy, 1)
	}
	publish(t, js, "orders.eu", 5, 0)
	publish(t, js, "payments.eu", 5, 0)
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "a"})
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "b"})
	addConsumer(t, js, "PAYMENTS", jetstream.ConsumerConfig{Durable: "a"})
	target := Target{Kind: ToSeq, Seq: 3}
	p1 := mustPlan(t, js, "ORDERS", nil, target, Options{})
	p2 := mustPlan(t, js, "PAYMENTS", nil, target, Options{})
	set := Combine(target, []*Plan{p1, p2})
	if len(set.Changes) != 3 || set.Streams[1] != "PAYMENTS" {
		t.Fatalf("combined %+v", set)
	}
	b, _ := json.Marshal(set)
	plans, err := ReadPlans(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(plans) != 2 || plans[0].Stream != "ORDERS" || len(plans[0].Changes) != 2 || plans[1].Stream != "PAYMENTS" || len(plans[1].Changes) != 1 || plans[1].Changes[0].To.Sequence != 3 {
		t.Fatalf("read back %d plans: %+v", len(plans), plans)
	}
	for _, p := range plans {
		if _, err := Replan(testCtx(t), js, p, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	b, _ = json.Marshal(p1)
	if plans, err := ReadPlans(b); err != nil || len(plans) != 1 || plans[0].Stream != "ORDERS" {
		t.Fatalf("a single plan: %v, %v", plans, err)
	}
	for _, bad := range []string{`[]`, `{"streams":["A","A"],"changes":[]}`, `{"streams":["A"],"changes":[{"stream":"B","consumer":"c","to":{"sequence":1}}]}`, `{"streams":["A"],"changes":[{"stream":"A","consumer":"c","to":{"sequence":0}}]}`} {
		if _, err := ReadPlans([]byte(bad)); !errors.Is(err, jsutil.ErrBadInput) {
			t.Errorf("ReadPlans(%s): %v, want bad input", bad, err)
		}
	}
}
