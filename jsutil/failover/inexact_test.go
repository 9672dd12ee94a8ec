package failover

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/replica"
	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestCopyRefusesInexact: origin O (old-1..10) is mirrored to M, then
// deleted and created again with new-1..15; M holds old-1..10 and
// new-11..15. A consumer of the new O that had finished 4 messages has
// its next position (5) only among M's copies of the old O: the copy is
// not exact, and it is refused (jsutil.ErrConflict) naming why unless
// AllowInexact (then a warning, and it starts at M's first copy of the
// new O). A consumer at 12 is copied exactly.
func TestCopyRefusesInexact(t *testing.T) {
	js := testserver.JetStream(t)
	ctx := testserver.Context(t, time.Minute)
	testserver.AddStream(t, js, jetstream.StreamConfig{Name: "O", Subjects: []string{"o.a"}})
	testserver.AddStream(t, js, jetstream.StreamConfig{Name: "M", Mirror: &jetstream.StreamSource{Name: "O"}})
	pub := func(prefix string, n int) {
		for i := 1; i <= n; i++ {
			if _, err := testserver.Publish(ctx, js, &nats.Msg{Subject: "o.a", Data: fmt.Appendf(nil, "%s-%d", prefix, i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	msgs := func(stream string) uint64 {
		s, err := js.Stream(ctx, stream)
		if err != nil {
			return 0
		}
		return s.CachedInfo().State.Msgs
	}
	pub("old", 10)
	testserver.WaitFor(t, time.Minute, "M to copy 10", func() bool { return msgs("M") == 10 })
	if err := js.DeleteStream(ctx, "O"); err != nil {
		t.Fatal(err)
	}
	testserver.AddStream(t, js, jetstream.StreamConfig{Name: "O", Subjects: []string{"o.a"}})
	pub("new", 15)
	testserver.WaitFor(t, time.Minute, "M to copy 15", func() bool { return msgs("M") == 15 })
	for name, n := range map[string]int{"early": 4, "late": 11} {
		c := testserver.AddConsumer(t, js, "O", jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy})
		if err := testserver.Take(c, n, 5*time.Second, func(m jetstream.Msg) error { return m.DoubleAck(ctx) }); err != nil {
			t.Fatal(err)
		}
	}
	origin, target := replica.Side{JS: js, Stream: "O"}, replica.Side{JS: js, Stream: "M"}
	plan, err := PlanCopy(ctx, origin, []string{"early", "late"}, false, target, Options{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]int{}
	for i, c := range plan.Copies {
		byName[c.Consumer] = i
	}
	early, late := plan.Copies[byName["early"]], plan.Copies[byName["late"]]
	if early.Translation.Exact || !strings.Contains(early.Translation.Reason, `came from an earlier stream "O"`) || !late.Translation.Exact {
		t.Fatalf("translations: early %+v, late %+v", early.Translation, late.Translation)
	}
	err = plan.Changes.Err()
	if !errors.Is(err, jsutil.ErrConflict) || !strings.Contains(err.Error(), `reset consumer "early" on "M"`) || !strings.Contains(err.Error(), "pass --allow-inexact") {
		t.Fatalf("plan error %v; want early refused", err)
	}
	if c := plan.Changes.Changes[byName["late"]]; c.Refused != "" || c.To.Sequence != 12 {
		t.Fatalf("late: refused %q, to %d", c.Refused, c.To.Sequence)
	}
	plan, err = PlanCopy(ctx, origin, []string{"early"}, false, target, Options{AllowInexact: true})
	if err != nil {
		t.Fatal(err)
	}
	c := plan.Changes.Changes[0]
	if c.Refused != "" || c.To.Sequence != 11 || !strings.Contains(strings.Join(c.Warnings, "\n"), "translated by time (") {
		t.Fatalf("with AllowInexact: refused %q, to %d, warnings %v", c.Refused, c.To.Sequence, c.Warnings)
	}
	if err := reset.Execute(ctx, js, plan.Changes, reset.Options{}); err != nil {
		t.Fatal(err)
	}
	cons, err := js.Consumer(ctx, "M", "early")
	if err != nil {
		t.Fatal(err)
	}
	m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil || string(m.Data()) != "new-11" {
		t.Fatalf("the copy delivers %v (%v), want new-11", m, err)
	}
}
