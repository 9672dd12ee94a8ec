package reset

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// wantRecovered finishes the stream's one unfinished change with recover
// and checks it is done, verified, recorded once in history, its intent
// gone and the consumer not paused, with its next delivery at next.
func wantRecovered(t *testing.T, js jetstream.JetStream, stream, name string, next uint64, opts Options) *RecoverChange {
	t.Helper()
	r, err := PlanRecover(testCtx(t), js, stream, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Changes) != 1 {
		t.Fatalf("recover plan: %d changes, want 1", len(r.Changes))
	}
	rc := r.Changes[0]
	if err := ExecuteRecover(testCtx(t), js, r, opts); err != nil {
		t.Fatalf("recover (%s/%s: %s): %v", rc.State, rc.Action, rc.Reason, err)
	}
	if !rc.Done || !rc.Verified {
		t.Fatalf("recover: done %v verified %v: %+v", rc.Done, rc.Verified, rc)
	}
	if u := intentsOf(t, js, stream, name); len(u) != 0 {
		t.Fatalf("intent left: %+v", u)
	}
	if h, err := History(testCtx(t), js, "", stream, name); err != nil || len(h) == 0 || h[0].ChangeID != rc.ChangeID || !h[0].Recovered {
		t.Fatalf("history %+v (%v), want change %s recorded by recover", h, err, rc.ChangeID)
	}
	if i := info(t, js, stream, name); i.Paused {
		t.Fatalf("left paused until %v", i.Config.PauseUntil)
	}
	if got := fetchNoAck(t, js, stream, name, 1); len(got) != 1 || got[0] != next {
		t.Fatalf("next delivery %v, want %d", got, next)
	}
	return rc
}

// TestRecoverAckFloorResetAnyPolicy: a reset back to the ack floor is
// allowed for every deliver policy only as the server's own reset to the
// ack floor (sequence 0). Recover of such a change, interrupted after its
// intent or while the consumer was paused, finishes it the same way: with
// an explicit sequence the server refuses it (10204) for deliver policies
// new, last and last_per_subject.
func TestRecoverAckFloorResetAnyPolicy(t *testing.T) {
	cases := []struct {
		policy jetstream.DeliverPolicy
		pause  bool
	}{
		{jetstream.DeliverNewPolicy, false},
		{jetstream.DeliverLastPolicy, false},
		{jetstream.DeliverLastPerSubjectPolicy, false},
		{jetstream.DeliverNewPolicy, true},
	}
	for _, tc := range cases {
		name := tc.policy.String()
		if tc.pause {
			name += "/paused"
		}
		t.Run(name, func(t *testing.T) {
			js := single(t)
			addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
			cfg := rich("billing")
			cfg.DeliverPolicy = tc.policy
			addConsumer(t, js, "ORDERS", cfg)
			publish(t, js, "orders.eu", 10, 0)
			fetchNoAck(t, js, "ORDERS", "billing", 5)
			opts := Options{crash: func(s string) bool { return s == "intent" }}
			if tc.pause {
				// Force: the five messages are never acknowledged, so
				// the drain ends by its timeout.
				opts = Options{Pause: true, Force: true, DrainTimeout: 50 * time.Millisecond, crash: func(s string) bool { return s == "paused" }}
			}
			p := mustPlan(t, js, "ORDERS", []string{"billing"}, Target{Kind: ToAckFloor}, opts)
			if c := p.Changes[0]; c.Method != Reset || c.To.Sequence != 1 {
				t.Fatalf("plan: %s to %d, want an in-place reset to 1", c.Method, c.To.Sequence)
			}
			if err := Execute(testCtx(t), js, p, opts); !errors.Is(err, errCrashed) {
				t.Fatalf("execute: %v", err)
			}
			if tc.pause && !info(t, js, "ORDERS", "billing").Paused {
				t.Fatal("the interrupted change did not leave the consumer paused")
			}
			rc := wantRecovered(t, js, "ORDERS", "billing", 1, Options{})
			if rc.Method != Reset || rc.Resume != tc.pause || rc.Resumed != tc.pause {
				t.Fatalf("recovered with %s, resume %v resumed %v", rc.Method, rc.Resume, rc.Resumed)
			}
		})
	}
}

// TestRecoverFallsBackWithoutResetAPI: an in-place reset that auto picked,
// interrupted while the consumer was paused, is finished by recover on a
// server without the reset API the way the change would have been: by a
// recreate, then resumed. A reset forced with --method reset is not
// recreated: recover fails, and the intent stays.
func TestRecoverFallsBackWithoutResetAPI(t *testing.T) {
	noAPI := func(ctx context.Context, js jetstream.JetStream, stream, consumer string, seq uint64) (*resetReply, error) {
		return nil, nats.ErrNoResponders
	}
	for _, method := range []Method{Auto, Reset} {
		t.Run(string(method), func(t *testing.T) {
			js := single(t)
			addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
			publish(t, js, "orders.eu", 10, 0)
			addConsumer(t, js, "ORDERS", rich("billing"))
			fetch(t, js, "ORDERS", "billing", 8)
			before := configWithoutStart(t, js, "ORDERS", "billing")
			opts := Options{Method: method, inPlace: noAPI, Pause: true, crash: func(s string) bool { return s == "paused" }}
			p := mustPlan(t, js, "ORDERS", []string{"billing"}, Target{Kind: ToSeq, Seq: 3}, opts)
			if c := p.Changes[0]; c.Method != Reset {
				t.Fatalf("planned %s", c.Method)
			}
			if err := Execute(testCtx(t), js, p, opts); !errors.Is(err, errCrashed) {
				t.Fatalf("execute: %v", err)
			}
			ropts := Options{inPlace: noAPI}
			if method == Reset {
				r, err := PlanRecover(testCtx(t), js, "ORDERS", nil, ropts)
				if err != nil {
					t.Fatal(err)
				}
				if err := ExecuteRecover(testCtx(t), js, r, ropts); err == nil || r.Changes[0].Done {
					t.Fatalf("a forced reset was finished without the reset API: %+v", r.Changes[0])
				}
				if u := intentsOf(t, js, "ORDERS", "billing"); len(u) != 1 {
					t.Fatalf("intents %+v, want the change's", u)
				}
				return
			}
			rc := wantRecovered(t, js, "ORDERS", "billing", 3, ropts)
			if rc.Method != Recreate || !rc.Resumed || !strings.Contains(strings.Join(rc.Warnings, "\n"), "no consumer reset API") {
				t.Fatalf("recovered with %s, resumed %v, warnings %v; want a recreate saying why", rc.Method, rc.Resumed, rc.Warnings)
			}
			sameConfig(t, before, configWithoutStart(t, js, "ORDERS", "billing"))
		})
	}
}
