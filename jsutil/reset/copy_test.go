package reset

import (
	"errors"
	"strings"
	"testing"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

func TestIntersectSubjects(t *testing.T) {
	for _, tc := range []struct {
		a, b, want string
		ok         bool
	}{
		{"orders.eu", "orders.eu", "orders.eu", true},
		{"orders.eu", "orders.us", "", false},
		{"orders.*", "orders.eu", "orders.eu", true},
		{"orders.eu", "orders.*", "orders.eu", true},
		{"orders.>", "orders.eu.paris", "orders.eu.paris", true},
		{"orders.>", "orders", "", false},
		{"orders.*.paris", "orders.eu.*", "orders.eu.paris", true},
		{"*.eu", "orders.>", "orders.eu", true},
		{">", "orders.*", "orders.*", true},
		{"*", ">", "*", true},
		{">", ">", ">", true},
		{"orders.*", "orders.*.x", "", false},
		{"a.>", "*.b.>", "a.b.>", true},
	} {
		got, ok := intersectSubjects(tc.a, tc.b)
		if got != tc.want || ok != tc.ok {
			t.Errorf("intersectSubjects(%q, %q) = %q, %v; want %q, %v", tc.a, tc.b, got, ok, tc.want, tc.ok)
		}
	}
	if got, any := intersectFilters([]string{"orders.eu", "orders.us"}, []string{"orders.*"}); !any || strings.Join(got, " ") != "orders.eu orders.us" {
		t.Errorf("intersectFilters: %v %v", got, any)
	}
	if got, any := intersectFilters(nil, []string{"orders.us"}); !any || strings.Join(got, " ") != "orders.us" {
		t.Errorf("intersectFilters(all, us): %v %v", got, any)
	}
	if _, any := intersectFilters([]string{"orders.eu"}, []string{"orders.us"}); any {
		t.Errorf("intersectFilters(eu, us) found something")
	}
}

// TestToConsumer: --to-consumer takes the target from another consumer of
// the stream (its ack floor + 1, or its delivered + 1); the plan shows the
// source, warns when the filters differ, and refuses (with the count) a
// move that would skip messages the consumer's filter takes and the
// source's does not, unless forced.
func TestToConsumer(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	for i := 0; i < 10; i++ { // eu on odd sequences, us on even ones
		publish(t, js, "orders.eu", 1, 0)
		publish(t, js, "orders.us", 1, 0)
	}
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "billing"})
	fetch(t, js, "ORDERS", "billing", 8)
	fetchNoAck(t, js, "ORDERS", "billing", 2) // delivered 10, ack floor 8
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "audit"})

	// Same filter: the source's ack floor + 1, or its delivered + 1.
	p := mustPlan(t, js, "ORDERS", []string{"audit"}, Target{Kind: ToConsumer, Consumer: "billing"}, Options{})
	c := p.Changes[0]
	if c.To.Sequence != 9 || c.Source == nil || c.Source.AckFloor != 8 || c.Source.Delivered != 10 || c.Source.Position != PositionAckFloor || len(c.Warnings) != 0 || c.Refused != "" {
		t.Fatalf("copy the ack floor: to %d, source %+v, warnings %v, refused %q", c.To.Sequence, c.Source, c.Warnings, c.Refused)
	}
	if got := p.Target.String(); got != "consumer billing's ack floor" {
		t.Errorf("target reads %q", got)
	}
	p = mustPlan(t, js, "ORDERS", []string{"audit"}, Target{Kind: ToConsumer, Consumer: "billing", Position: PositionDelivered}, Options{})
	if c := p.Changes[0]; c.To.Sequence != 11 || cnt(c.Skip) != 10 {
		t.Fatalf("copy delivered: to %d, skip %d; want 11 and 10", c.To.Sequence, cnt(c.Skip))
	}
	mustRun(t, js, "ORDERS", []string{"audit"}, Target{Kind: ToConsumer, Consumer: "billing"}, Options{})
	if got := fetch(t, js, "ORDERS", "audit", 1); len(got) != 1 || got[0] != 9 {
		t.Fatalf("audit's next delivery %v, want 9", got)
	}

	// The source's filter covers this consumer's: a warning only.
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "eu", FilterSubject: "orders.eu"})
	p = mustPlan(t, js, "ORDERS", []string{"eu"}, Target{Kind: ToConsumer, Consumer: "billing"}, Options{})
	if c := p.Changes[0]; c.Refused != "" || len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "its filter (orders.eu) differs from billing's (all subjects)") || c.Source.Uncovered != 0 || cnt(c.Skip) != 4 {
		t.Fatalf("eu from billing: %+v", c)
	}

	// A source on other subjects: the eu messages it passes were handled by
	// neither, so copying its position is refused with their count.
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "us", FilterSubject: "orders.us"})
	fetch(t, js, "ORDERS", "us", 5) // us ack floor 10
	target := Target{Kind: ToConsumer, Consumer: "us"}
	p = mustPlan(t, js, "ORDERS", []string{"eu"}, target, Options{})
	c = p.Changes[0]
	if c.To.Sequence != 11 || c.Source.Uncovered != 5 || !strings.Contains(c.Refused, `copying the ack floor of "us" skips 5 messages that this consumer's filter takes and "us"'s does not`) {
		t.Fatalf("eu from us: to %d, uncovered %d, refused %q", c.To.Sequence, c.Source.Uncovered, c.Refused)
	}
	if err := p.Err(); !errors.Is(err, jsutil.ErrConflict) {
		t.Fatalf("refusal %v, want a conflict", err)
	}
	p = mustPlan(t, js, "ORDERS", []string{"eu"}, target, Options{Force: true})
	if c := p.Changes[0]; c.Refused != "" || c.Source.Uncovered != 5 {
		t.Fatalf("forced: %+v", c)
	}

	// --all leaves the source alone; a consumer cannot copy itself; an
	// unknown source is not found.
	p = mustPlan(t, js, "ORDERS", nil, Target{Kind: ToConsumer, Consumer: "billing"}, Options{Force: true})
	var names []string
	for _, c := range p.Changes {
		names = append(names, c.Consumer)
	}
	if strings.Join(names, " ") != "audit eu us" {
		t.Fatalf("--all planned %v", names)
	}
	if _, err := NewPlan(testCtx(t), js, "ORDERS", []string{"billing"}, false, Target{Kind: ToConsumer, Consumer: "billing"}, Options{}); !errors.Is(err, jsutil.ErrBadInput) {
		t.Fatalf("copy itself: %v", err)
	}
	_, err := NewPlan(testCtx(t), js, "ORDERS", []string{"audit"}, false, Target{Kind: ToConsumer, Consumer: "nope"}, Options{})
	if !errors.Is(err, jsutil.ErrNotFound) || !strings.Contains(err.Error(), `copy the position of consumer "nope" on "ORDERS"`) {
		t.Fatalf("unknown source: %v", err)
	}
}
