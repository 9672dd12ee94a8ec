package reset

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestUnfinishedStale: Describe and List attach an unfinished change to
// the consumer of its name only as a change to finish while it applies to
// that consumer: edited since, or deleted and created again since, the
// change is attached with the reason it does not apply (recover leaves
// such a consumer alone), and its text does not point at recover to
// finish it.
func TestUnfinishedStale(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 10, 0)
	for _, tc := range []struct {
		name   string
		fault  func(name string)
		reason string
	}{
		{"control", func(string) {}, ""},
		{"edited", func(name string) {
			cfg := rich(name)
			cfg.Description = "edited by an operator"
			if _, err := js.UpdateConsumer(testCtx(t), "ORDERS", cfg); err != nil {
				t.Fatal(err)
			}
		}, "its configuration was changed by someone else since the change started (description)"},
		{"recreated", func(name string) {
			if err := js.DeleteConsumer(testCtx(t), "ORDERS", name); err != nil {
				t.Fatal(err)
			}
			addConsumer(t, js, "ORDERS", rich(name))
		}, "was deleted and created again by someone else since the change started"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "stale" + tc.name
			addConsumer(t, js, "ORDERS", rich(name))
			opts := Options{Method: Recreate, crash: func(s string) bool { return s == "intent" }}
			p := mustPlan(t, js, "ORDERS", []string{name}, Target{Kind: ToSeq, Seq: 4}, opts)
			if err := Execute(testCtx(t), js, p, opts); !errors.Is(err, errCrashed) {
				t.Fatalf("execute: %v, want the simulated crash", err)
			}
			tc.fault(name)
			st, err := Describe(testCtx(t), js, "ORDERS", name, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			u := st.Unfinished
			if u == nil || !strings.Contains(u.Stale, tc.reason) || (tc.reason == "") != (u.Stale == "") {
				t.Fatalf("unfinished %+v; want stale %q", u, tc.reason)
			}
			text := u.String()
			if tc.reason != "" && (strings.Contains(text, "finish it with") || !strings.Contains(text, "does not apply to it")) {
				t.Fatalf("the warning points at recover to finish it: %s", text)
			}
			list, err := List(testCtx(t), js, "ORDERS", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range list {
				if s.Consumer == name && (s.Unfinished == nil || s.Unfinished.Stale != u.Stale) {
					t.Fatalf("List attaches %+v, Describe %+v", s.Unfinished, u)
				}
			}
		})
	}
}

// TestNotOfThisConsumer: a history record of an earlier consumer of the
// name is told apart from the records of the consumer now.
func TestNotOfThisConsumer(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 10, 0)
	addConsumer(t, js, "ORDERS", rich("h"))
	fetch(t, js, "ORDERS", "h", 5)
	mustRun(t, js, "ORDERS", []string{"h"}, Target{Kind: ToSeq, Seq: 2}, Options{})
	recs, err := History(testCtx(t), js, "", "ORDERS", "h")
	if err != nil || len(recs) != 1 {
		t.Fatalf("history %+v, %v", recs, err)
	}
	if got, err := NotOfThisConsumer(testCtx(t), js, "ORDERS", "h", recs); err != nil || len(got) != 0 {
		t.Fatalf("the consumer's own record: %v, %v", got, err)
	}
	if err := js.DeleteConsumer(testCtx(t), "ORDERS", "h"); err != nil {
		t.Fatal(err)
	}
	addConsumer(t, js, "ORDERS", rich("h"))
	got, err := NotOfThisConsumer(testCtx(t), js, "ORDERS", "h", recs)
	if err != nil || !strings.Contains(got[recs[0].Revision], `consumer "h" on "ORDERS" was deleted and created again since history revision`) {
		t.Fatalf("the earlier consumer's record: %v, %v", got, err)
	}
}
