package reset

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// rich is a consumer configuration with many settings a recreate must keep.
func rich(name string) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable: name, Description: "the billing worker", AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: 45 * time.Second, MaxDeliver: 7, BackOff: []time.Duration{time.Second, 5 * time.Second},
		FilterSubjects: []string{"orders.eu", "orders.us"}, MaxAckPending: 100, MaxWaiting: 64,
		Metadata: map[string]string{"team": "billing"}, InactiveThreshold: time.Hour,
	}
}

// once returns a seam that is true the first time it is asked about op.
func once(op string) func(string) bool {
	var mu sync.Mutex
	hit := false
	return func(o string) bool {
		mu.Lock()
		defer mu.Unlock()
		if o == op && !hit {
			hit = true
			return true
		}
		return false
	}
}

func intentsOf(t testing.TB, js jetstream.JetStream, stream, name string) []Unfinished {
	t.Helper()
	u, err := ListUnfinished(testCtx(t), js, "", stream, name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// wantHistory checks that the consumer's history holds change id exactly
// once, with the full configuration before the change, and returns it.
func wantHistory(t testing.TB, js jetstream.JetStream, stream, name, id string) Record {
	t.Helper()
	h, err := History(testCtx(t), js, "", stream, name)
	if err != nil {
		t.Fatal(err)
	}
	var got []Record
	for _, r := range h {
		if r.ChangeID == id {
			got = append(got, r)
		}
	}
	if len(got) != 1 {
		t.Fatalf("history holds change %s %d times, want once: %+v", id, len(got), h)
	}
	if len(got[0].Config) == 0 || !strings.Contains(string(got[0].Config), `"the billing worker"`) {
		t.Fatalf("history record lacks the full configuration: %s", got[0].Config)
	}
	return got[0]
}

// TestLostReplies: a reply lost after the server applied the request
// (delete, create, reset) is followed up in the same run: the change is
// finished, verified, recorded once, and its intent record removed.
func TestLostReplies(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 10, 0)
	for _, tc := range []struct {
		op     string
		method Method
	}{{"delete", Recreate}, {"create", Recreate}, {"reset", Reset}} {
		t.Run(tc.op, func(t *testing.T) {
			name := "lost" + tc.op
			addConsumer(t, js, "ORDERS", rich(name))
			fetch(t, js, "ORDERS", name, 6)
			before := configWithoutStart(t, js, "ORDERS", name)
			lose := once(tc.op)
			opts := Options{Method: tc.method, lose: lose}
			p := mustRun(t, js, "ORDERS", []string{name}, Target{Kind: ToSeq, Seq: 3}, opts)
			c := p.Changes[0]
			if lose(tc.op) {
				t.Fatalf("no %s reply was lost", tc.op)
			}
			if tc.op != "delete" && !strings.Contains(c.proofKind, "was lost") {
				t.Fatalf("verified from %q, want consumer info after the lost reply", c.proofKind)
			}
			sameConfig(t, before, configWithoutStart(t, js, "ORDERS", name))
			if got := fetch(t, js, "ORDERS", name, 1); len(got) != 1 || got[0] != 3 {
				t.Fatalf("next delivery %v, want 3", got)
			}
			wantHistory(t, js, "ORDERS", name, c.ChangeID)
			if u := intentsOf(t, js, "ORDERS", name); len(u) != 0 {
				t.Fatalf("intent records left: %+v", u)
			}
		})
	}
}

// TestCrashAndRecover stops a change at every step as if jsctl died there,
// then finishes it with PlanRecover/ExecuteRecover: the consumer exists
// with its configuration, at the target, recorded in history exactly once.
func TestCrashAndRecover(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 5, 0)
	publish(t, js, "orders.us", 5, 0)
	cases := []struct {
		method        Method
		step          string
		state, action string
	}{
		{Recreate, "intent", StateOld, ActRecreate},
		{Recreate, "deleted", StateMissing, ActCreate},
		{Recreate, "created", StateTarget, ActRecord},
		{Recreate, "applied", StateTarget, ActRecord},
		{Recreate, "recorded", StateRecorded, ActClear},
		{Reset, "intent", StateOld, ActReset},
		{Reset, "applied", StateTarget, ActRecord},
		{Reset, "recorded", StateRecorded, ActClear},
	}
	for i, tc := range cases {
		t.Run(string(tc.method)+"/"+tc.step, func(t *testing.T) {
			name := fmt.Sprintf("crash%d", i)
			addConsumer(t, js, "ORDERS", rich(name))
			fetch(t, js, "ORDERS", name, 8)
			before := configWithoutStart(t, js, "ORDERS", name)
			opts := Options{Method: tc.method, crash: func(s string) bool { return s == tc.step }}
			p := mustPlan(t, js, "ORDERS", []string{name}, Target{Kind: ToSeq, Seq: 4}, opts)
			if err := Execute(testCtx(t), js, p, opts); !errors.Is(err, errCrashed) {
				t.Fatalf("execute: %v, want the simulated crash", err)
			}
			id := p.Changes[0].ChangeID
			u := intentsOf(t, js, "ORDERS", name)
			if len(u) != 1 || u[0].ChangeID != id || u[0].Command != "jsctl consumer recover ORDERS "+name+" --execute" {
				t.Fatalf("unfinished: %+v", u)
			}
			// A new change of the consumer is refused until it is recovered.
			again := mustPlan(t, js, "ORDERS", []string{name}, Target{Kind: ToSeq, Seq: 2}, Options{Force: true})
			if err := again.Err(); !errors.Is(err, jsutil.ErrConflict) || !strings.Contains(err.Error(), "consumer recover ORDERS "+name) {
				t.Fatalf("plan over an unfinished change: %v", err)
			}
			r, err := PlanRecover(testCtx(t), js, "ORDERS", []string{name}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Changes) != 1 || r.Changes[0].State != tc.state || r.Changes[0].Action != tc.action {
				t.Fatalf("recover plan: %+v", r.Changes)
			}
			if err := ExecuteRecover(testCtx(t), js, r, Options{}); err != nil {
				t.Fatal(err)
			}
			if rc := r.Changes[0]; !rc.Done {
				t.Fatalf("not done: %+v", rc)
			}
			sameConfig(t, before, configWithoutStart(t, js, "ORDERS", name))
			wantHistory(t, js, "ORDERS", name, id)
			if u := intentsOf(t, js, "ORDERS", name); len(u) != 0 {
				t.Fatalf("intent records left: %+v", u)
			}
			if got := fetch(t, js, "ORDERS", name, 1); len(got) != 1 || got[0] != 4 {
				t.Fatalf("next delivery %v, want 4", got)
			}
		})
	}
}

// TestIntentConflict: a change of a consumer whose intent record is held
// (another run, or an unfinished one) fails with a conflict and changes
// nothing.
func TestIntentConflict(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 10, 0)
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "c"})
	fetch(t, js, "ORDERS", "c", 5)
	// Planned before the other run holds the record: only the intent's
	// compare-and-set stops it.
	p := mustPlan(t, js, "ORDERS", []string{"c"}, Target{Kind: ToSeq, Seq: 2}, Options{})
	first := mustPlan(t, js, "ORDERS", []string{"c"}, Target{Kind: ToSeq, Seq: 8}, Options{})
	crash := Options{crash: func(s string) bool { return s == "intent" }}
	if err := Execute(testCtx(t), js, first, crash); !errors.Is(err, errCrashed) {
		t.Fatal(err)
	}
	err := Execute(testCtx(t), js, p, Options{})
	if !errors.Is(err, jsutil.ErrConflict) || !strings.Contains(err.Error(), "another change is in progress or unfinished") {
		t.Fatalf("got %v", err)
	}
	if got := position(t, js, "ORDERS", "c"); got != [2]uint64{5, 5} {
		t.Fatalf("consumer moved to %v", got)
	}
}

// TestToPreviousRebuildsDeleted: history keeps the full configuration, so
// --to-previous rebuilds a consumer someone deleted, at its previous
// position, with its original deliver policy.
func TestToPreviousRebuildsDeleted(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 5, 0)
	publish(t, js, "orders.us", 5, 0)
	addConsumer(t, js, "ORDERS", rich("gone"))
	fetch(t, js, "ORDERS", "gone", 6)
	before := configWithoutStart(t, js, "ORDERS", "gone")
	mustRun(t, js, "ORDERS", []string{"gone"}, Target{Kind: ToSeq, Seq: 2}, Options{})
	if err := js.DeleteConsumer(testCtx(t), "ORDERS", "gone"); err != nil {
		t.Fatal(err)
	}
	p := mustRun(t, js, "ORDERS", []string{"gone"}, Target{Kind: ToPrevious}, Options{})
	c := p.Changes[0]
	if c.Method != Create || c.To.Sequence != 7 || c.UndoOf == 0 {
		t.Fatalf("rebuild: %+v", c)
	}
	sameConfig(t, before, configWithoutStart(t, js, "ORDERS", "gone"))
	if i := info(t, js, "ORDERS", "gone"); i.Config.DeliverPolicy != jetstream.DeliverAllPolicy {
		t.Fatalf("deliver policy %v, want all (kept from history)", i.Config.DeliverPolicy)
	}
	if got := fetch(t, js, "ORDERS", "gone", 1); len(got) != 1 || got[0] != 7 {
		t.Fatalf("next delivery %v, want 7", got)
	}
	wantHistory(t, js, "ORDERS", "gone", c.ChangeID)

	// Without history there is nothing to rebuild from.
	_, err := NewPlan(testCtx(t), js, "ORDERS", []string{"never"}, false, Target{Kind: ToPrevious}, Options{})
	if !errors.Is(err, jsutil.ErrNotFound) || !strings.Contains(err.Error(), "history holds nothing to rebuild it from") {
		t.Fatalf("got %v", err)
	}
}

// TestPlanMovesCreates: a saved configuration (as a snapshot keeps it)
// creates a missing consumer at its saved position and moves one that
// exists.
func TestPlanMovesCreates(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 10, 0)
	newPolicy := rich("fresh")
	newPolicy.DeliverPolicy = jetstream.DeliverNewPolicy
	addConsumer(t, js, "ORDERS", newPolicy)
	addConsumer(t, js, "ORDERS", rich("kept"))
	saved, err := loadConsumer(testCtx(t), js, "ORDERS", "fresh")
	if err != nil {
		t.Fatal(err)
	}
	before := configWithoutStart(t, js, "ORDERS", "fresh")
	if err := js.DeleteConsumer(testCtx(t), "ORDERS", "fresh"); err != nil {
		t.Fatal(err)
	}
	moves := []Move{{Consumer: "fresh", Seq: 4, Config: saved.raw.json(), From: "a test snapshot"}, {Consumer: "kept", Seq: 6}}
	p, err := PlanMoves(testCtx(t), js, "ORDERS", moves, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Warnings: its deliver policy, and its saved filters and max deliver
	// against the server's defaults.
	if c := p.Changes[0]; c.Method != Create || !strings.Contains(c.Reason, "a test snapshot") || len(c.Warnings) != 3 {
		t.Fatalf("fresh: %+v", c)
	}
	if err := Execute(testCtx(t), js, p, Options{}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []uint64{4, 6} {
		c := p.Changes[i]
		if !c.Verified {
			t.Fatalf("%s not verified: %v", c.Consumer, c.Warnings)
		}
		if got := fetch(t, js, "ORDERS", c.Consumer, 1); len(got) != 1 || got[0] != want {
			t.Fatalf("%s: next delivery %v, want %d", c.Consumer, got, want)
		}
	}
	sameConfig(t, before, configWithoutStart(t, js, "ORDERS", "fresh"))
}

// TestHistoryUnknownStream: an unknown stream is not found, not an empty
// history.
func TestHistoryUnknownStream(t *testing.T) {
	js := single(t)
	_, err := History(testCtx(t), js, "", "NOPE", "c")
	if !errors.Is(err, jsutil.ErrNotFound) || !strings.Contains(err.Error(), `"NOPE": stream not found`) {
		t.Fatalf("got %v", err)
	}
}

// TestConcurrentRecover: two `consumer recover --execute` runs, or a run
// and someone else, meet on one unfinished change. The change is made and
// recorded once, and nothing made since is deleted.
func TestConcurrentRecover(t *testing.T) {
	// unfinished leaves a recreate of billing (back to 3) unfinished: with
	// its intent written (crash "intent") or made and not recorded
	// ("applied"); it returns the change id.
	unfinished := func(t *testing.T, js jetstream.JetStream, step string) string {
		addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
		publish(t, js, "orders.eu", 10, 0)
		addConsumer(t, js, "ORDERS", rich("billing"))
		fetch(t, js, "ORDERS", "billing", 8)
		opts := Options{Method: Recreate, crash: func(s string) bool { return s == step }}
		p := mustPlan(t, js, "ORDERS", []string{"billing"}, Target{Kind: ToSeq, Seq: 3}, opts)
		if err := Execute(testCtx(t), js, p, opts); !errors.Is(err, errCrashed) {
			t.Fatalf("execute: %v", err)
		}
		return p.Changes[0].ChangeID
	}
	planRecover := func(t *testing.T, js jetstream.JetStream, want string) *Recovery {
		r, err := PlanRecover(testCtx(t), js, "ORDERS", nil, Options{})
		if err != nil || len(r.Changes) != 1 || r.Changes[0].Action != want {
			t.Fatalf("recover plan %+v (%v), want one %s", r, err, want)
		}
		return r
	}

	t.Run("planned together", func(t *testing.T) {
		// Both plan; the first stops just after recording (before it
		// removes the intent), a client reads from the recreated
		// consumer, then the second runs: it lost the claim and leaves
		// the change alone.
		js := single(t)
		id := unfinished(t, js, "intent")
		r1, r2 := planRecover(t, js, ActRecreate), planRecover(t, js, ActRecreate)
		if err := ExecuteRecover(testCtx(t), js, r1, Options{crash: func(s string) bool { return s == "recorded" }}); !errors.Is(err, errCrashed) {
			t.Fatalf("first recover: %v", err)
		}
		if got := fetch(t, js, "ORDERS", "billing", 2); len(got) != 2 || got[0] != 3 {
			t.Fatalf("a client of the recovered consumer got %v, want 3,4", got)
		}
		created := info(t, js, "ORDERS", "billing").Created
		if err := ExecuteRecover(testCtx(t), js, r2, Options{}); err != nil {
			t.Fatalf("second recover: %v", err)
		}
		if rc := r2.Changes[0]; rc.Done || !strings.Contains(strings.Join(rc.Warnings, "; "), "taken over by another run): left alone") {
			t.Fatalf("second recover: done %v, warnings %v", rc.Done, rc.Warnings)
		}
		wantHistory(t, js, "ORDERS", "billing", id)
		if after := info(t, js, "ORDERS", "billing"); !after.Created.Equal(created) || after.AckFloor.Stream != 4 {
			t.Fatalf("the second recover replaced the consumer (created %v -> %v, ack floor %d, want 4)", created, after.Created, after.AckFloor.Stream)
		}
		// A later run sees who took the change over, and clears it.
		r3 := planRecover(t, js, ActClear)
		if w := strings.Join(r3.Changes[0].Warnings, "; "); !strings.Contains(w, "a recover run by ") || !strings.Contains(w, "took this change over") {
			t.Fatalf("warnings %q", w)
		}
	})

	t.Run("recreated since the plan", func(t *testing.T) {
		// Someone else recreates the consumer after recover planned to
		// recreate it, and a client reads from it: recover does not
		// delete it, and keeps the intent.
		js := single(t)
		id := unfinished(t, js, "intent")
		r := planRecover(t, js, ActRecreate)
		if err := js.DeleteConsumer(testCtx(t), "ORDERS", "billing"); err != nil {
			t.Fatal(err)
		}
		addConsumer(t, js, "ORDERS", rich("billing"))
		fetch(t, js, "ORDERS", "billing", 2)
		created := info(t, js, "ORDERS", "billing").Created
		err := ExecuteRecover(testCtx(t), js, r, Options{})
		want := `reset consumer "billing" on "ORDERS": consumer "billing" on "ORDERS" was deleted and created again since it was read (created `
		if !errors.Is(err, jsutil.ErrConflict) || !errors.Is(err, jsutil.ErrRecreated) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), created.UTC().Format(time.RFC3339Nano)+" now)") {
			t.Fatalf("got %v", err)
		}
		if after := info(t, js, "ORDERS", "billing"); !after.Created.Equal(created) || after.AckFloor.Stream != 2 {
			t.Fatalf("recover replaced the consumer made since (created %v -> %v, ack floor %d, want 2)", created, after.Created, after.AckFloor.Stream)
		}
		if ok, err := recorded(testCtx(t), js, HistoryBucket, "ORDERS", "billing", id); err != nil || ok {
			t.Fatalf("change recorded: %v (%v)", ok, err)
		}
		if u := intentsOf(t, js, "ORDERS", "billing"); len(u) != 1 {
			t.Fatalf("intents %v, want the change's kept", u)
		}
	})

	t.Run("recorded since the plan", func(t *testing.T) {
		// The change was made; another run records it after this one
		// planned to: it is recorded once.
		js := single(t)
		id := unfinished(t, js, "applied")
		r := planRecover(t, js, ActRecord)
		p, err := newPlanner(testCtx(t), js, "ORDERS", Options{}.withDefaults())
		if err != nil {
			t.Fatal(err)
		}
		cfg, _ := json.Marshal(rich("billing"))
		if err := p.record(testCtx(t), Record{Stream: "ORDERS", Consumer: "billing", Method: Recreate, ChangeID: id, Config: cfg, Recovered: true, To: To{Sequence: 3}}); err != nil {
			t.Fatal(err)
		}
		if err := ExecuteRecover(testCtx(t), js, r, Options{}); err != nil {
			t.Fatal(err)
		}
		if rc := r.Changes[0]; !rc.Done || !strings.Contains(strings.Join(rc.Warnings, "; "), "not recorded again") {
			t.Fatalf("recover: done %v, warnings %v", rc.Done, rc.Warnings)
		}
		wantHistory(t, js, "ORDERS", "billing", id)
		if u := intentsOf(t, js, "ORDERS", "billing"); len(u) != 0 {
			t.Fatalf("intents %v left", u)
		}
	})
}
