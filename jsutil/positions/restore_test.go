package positions

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/nats-io/nats.go/jetstream"
)

// TestRestoreRoundTrip: snapshot, consume, restore, proven with a plain
// client: the next delivery after the restore is the saved ack floor + 1,
// both for a consumer that moved on and for one deleted since, which the
// restore creates again with the same configuration.
func TestRestoreRoundTrip(t *testing.T) {
	ctx, js := setup(t, 20)
	for _, cfg := range []jetstream.ConsumerConfig{
		{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy},
		{Durable: "audit", Description: "audits", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 45 * time.Second,
			MaxDeliver: 7, BackOff: []time.Duration{time.Second, 5 * time.Second}, FilterSubject: "orders.>",
			MaxAckPending: 99, Metadata: map[string]string{"team": "pay"}},
	} {
		if _, err := js.CreateConsumer(ctx, "ORDERS", cfg); err != nil {
			t.Fatal(err)
		}
	}
	fetch(t, ctx, js, "billing", 4, 5*time.Second)
	fetch(t, ctx, js, "audit", 7, 5*time.Second)
	snap, err := Save(ctx, js, "before", "", Selection{Stream: "ORDERS", All: true}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fetch(t, ctx, js, "billing", 6, 5*time.Second)
	fetch(t, ctx, js, "audit", 5, 5*time.Second)
	if err := js.DeleteConsumer(ctx, "ORDERS", "audit"); err != nil {
		t.Fatal(err)
	}

	plans, err := PlanRestore(ctx, js, snap, nil, reset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(plans) != 1 || len(plans[0].Changes) != 2 || plans[0].Target.Snapshot != "before" {
		t.Fatalf("plans %+v", plans)
	}
	for _, c := range plans[0].Changes {
		want := map[string]reset.Method{"audit": reset.Create, "billing": reset.Reset}[c.Consumer]
		if c.Method != want {
			t.Fatalf("%s: method %s, want %s (%s)", c.Consumer, c.Method, want, c.Reason)
		}
	}
	if err := reset.Execute(ctx, js, plans[0], reset.Options{}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"billing": "[5]", "audit": "[8]"} {
		if got := fmt.Sprint(fetch(t, ctx, js, name, 1, 5*time.Second)); got != want {
			t.Fatalf("%s: next delivery after the restore %s, want %s (saved ack floor + 1)", name, got, want)
		}
	}
	cmps, err := Compare(ctx, js, snap, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range cmps {
		if len(m.ConfigChanges) != 0 || m.Deleted {
			t.Fatalf("%s after the restore: deleted %v, configuration changes %+v", m.Consumer, m.Deleted, m.ConfigChanges)
		}
	}
	h, err := reset.History(ctx, js, "", "ORDERS", "audit")
	if err != nil || len(h) != 1 || h[0].Method != reset.Create || h[0].Target.Snapshot != "before" {
		t.Fatalf("history %+v, %v", h, err)
	}
}

// TestRestoreSelect: consumers are picked by name, or as STREAM/CONSUMER
// where the snapshot holds a name on several streams.
func TestRestoreSelect(t *testing.T) {
	ctx, js := setup(t, 5)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "PAYMENTS", Subjects: []string{"payments.>"}}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"ORDERS", "PAYMENTS"} {
		for _, c := range []string{"billing", s + "_only"} {
			if _, err := js.CreateConsumer(ctx, s, jetstream.ConsumerConfig{Durable: c}); err != nil {
				t.Fatal(err)
			}
		}
	}
	once, err := Take(ctx, js, "once", "", Selection{Stream: "ORDERS", Consumers: []string{"billing", "ORDERS_only", "billing"}}, Options{})
	if err != nil || once.Consumers() != 2 {
		t.Fatalf("billing named twice: %v, %d consumers saved, want 2", err, once.Consumers())
	}
	snap, err := Take(ctx, js, "both", "", Selection{Streams: []string{"*"}, All: true}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(snap.ConsumerKeys(), " "); got != "ORDERS/billing ORDERS_only PAYMENTS/billing PAYMENTS_only" {
		t.Fatalf("keys %s", got)
	}
	plans, err := PlanRestore(ctx, js, snap, []string{"PAYMENTS/billing", "ORDERS_only"}, reset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range plans {
		for _, c := range p.Changes {
			got = append(got, p.Stream+"/"+c.Consumer)
		}
	}
	if strings.Join(got, " ") != "ORDERS/ORDERS_only PAYMENTS/billing" {
		t.Fatalf("picked %v", got)
	}
	if _, err := PlanRestore(ctx, js, snap, []string{"billing"}, reset.Options{}); !errors.Is(err, jsutil.ErrBadInput) || !strings.Contains(err.Error(), "name it as STREAM/CONSUMER") {
		t.Fatalf("ambiguous name: %v", err)
	}
	if _, err := PlanRestore(ctx, js, snap, []string{"nope"}, reset.Options{}); !errors.Is(err, jsutil.ErrNotFound) || !strings.Contains(err.Error(), `snapshot "both" holds no consumer "nope"`) {
		t.Fatalf("unknown consumer: %v", err)
	}
}
