package reset

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// puller is a live client reading from a consumer: it takes each message,
// works on it for a moment, logs its sequence and acks it.
type puller struct {
	mu   sync.Mutex
	seqs []uint64
}

func startPuller(t *testing.T, js jetstream.JetStream, stream, name string, work time.Duration) *puller {
	t.Helper()
	cons, err := js.Consumer(testCtx(t), stream, name)
	if err != nil {
		t.Fatal(err)
	}
	p := &puller{}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		md, _ := m.Metadata()
		time.Sleep(work)
		p.mu.Lock()
		p.seqs = append(p.seqs, md.Sequence.Stream)
		p.mu.Unlock()
		_ = m.Ack()
	}, jetstream.PullMaxMessages(5))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Stop)
	return p
}

func (p *puller) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.seqs)
}

func (p *puller) at(i int) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seqs[i]
}

// TestPauseLivePuller: --pause on a consumer a live client is reading from.
// The plan does not refuse it; no message is delivered between the pause
// and the reset (neither by the server's count nor to the client); the
// client's next message is the target, and it gets it at once after the
// resume (its pull request, waiting since before the pause, is woken).
func TestPauseLivePuller(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 300, 0)
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "live", Description: "the billing worker", MaxAckPending: 5})
	before := configWithoutStart(t, js, "ORDERS", "live")
	pl := startPuller(t, js, "ORDERS", "live", 5*time.Millisecond)
	testserver.WaitFor(t, 10*time.Second, "the puller to be busy", func() bool { return pl.count() >= 20 })

	var atPause, atReset int
	var dPause, dReset uint64
	var paused bool
	opts := Options{Pause: true, DrainTimeout: 10 * time.Second,
		crash: func(step string) bool {
			if step == "paused" {
				i := info(t, js, "ORDERS", "live")
				atPause, dPause, paused = pl.count(), i.Delivered.Stream, i.Paused
			}
			return false
		},
		inPlace: func(ctx context.Context, js jetstream.JetStream, stream, consumer string, seq uint64) (*resetReply, error) {
			atReset, dReset = pl.count(), info(t, js, stream, consumer).Delivered.Stream
			return resetConsumer(ctx, js, stream, consumer, seq)
		},
	}
	p := mustPlan(t, js, "ORDERS", []string{"live"}, Target{Kind: ToSeq, Seq: 5}, opts)
	c := p.Changes[0]
	if c.Refused != "" || c.Pause == nil || !c.Pause.Resume || c.Pause.Waiting+c.Pause.AckPending == 0 {
		t.Fatalf("plan: refused %q, pause %+v", c.Refused, c.Pause)
	}
	if err := Execute(testCtx(t), js, p, opts); err != nil {
		t.Fatal(err)
	}
	done := time.Now()
	if !paused || atPause != atReset || dPause != dReset {
		t.Fatalf("between the pause and the reset: paused %v, client got %d then %d messages, server delivered up to %d then %d", paused, atPause, atReset, dPause, dReset)
	}
	if !c.Verified || !c.Pause.Paused || !c.Pause.Resumed {
		t.Fatalf("change: verified %v, pause %+v, warnings %v", c.Verified, c.Pause, c.Warnings)
	}
	testserver.WaitFor(t, 5*time.Second, "the client's first message after the resume", func() bool { return pl.count() > atReset })
	if got := pl.at(atReset); got != 5 {
		t.Fatalf("first message after the reset %d, want 5", got)
	}
	t.Logf("the client had %d messages before the pause; its next (5) came %s after the run", atReset, time.Since(done).Round(time.Millisecond))
	if i := info(t, js, "ORDERS", "live"); i.Paused {
		t.Fatal("left paused")
	}
	sameConfig(t, before, configWithoutStart(t, js, "ORDERS", "live"))
	rec := wantHistory(t, js, "ORDERS", "live", c.ChangeID)
	if strings.Contains(string(rec.NewConfig), "pause_until") || rec.From.Delivered != c.From.Delivered {
		t.Fatalf("history: new config %s, from %+v", rec.NewConfig, rec.From)
	}
	if u := intentsOf(t, js, "ORDERS", "live"); len(u) != 0 {
		t.Fatalf("intent records left: %+v", u)
	}
}

// TestPauseRecreate: a recreate made with --pause creates the consumer
// paused, then resumes it; its configuration is unchanged.
func TestPauseRecreate(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 10, 0)
	addConsumer(t, js, "ORDERS", rich("r"))
	fetch(t, js, "ORDERS", "r", 6)
	before := configWithoutStart(t, js, "ORDERS", "r")
	opts := Options{Pause: true, Method: Recreate}
	p := mustRun(t, js, "ORDERS", []string{"r"}, Target{Kind: ToSeq, Seq: 3}, opts)
	if c := p.Changes[0]; !c.Pause.Paused || !c.Pause.Resumed || !strings.Contains(string(c.proof.raw["pause_until"]), "9999") {
		t.Fatalf("pause %+v, created with %s", c.Pause, c.proof.raw["pause_until"])
	}
	sameConfig(t, before, configWithoutStart(t, js, "ORDERS", "r"))
	if got := fetch(t, js, "ORDERS", "r", 1); len(got) != 1 || got[0] != 3 {
		t.Fatalf("next delivery %v, want 3", got)
	}
}

// TestPauseKeepAndAlready: --keep-paused leaves the consumer paused (until
// resumed); a consumer paused before the change stays paused as it was.
func TestPauseKeepAndAlready(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 10, 0)
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "kept"})
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "was"})
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	if _, err := js.PauseConsumer(testCtx(t), "ORDERS", "was", until); err != nil {
		t.Fatal(err)
	}
	opts := Options{Pause: true, KeepPaused: true}
	p := mustRun(t, js, "ORDERS", []string{"kept", "was"}, Target{Kind: ToSeq, Seq: 4}, opts)
	kept, was := p.Changes[0], p.Changes[1]
	if i := info(t, js, "ORDERS", "kept"); !i.Paused || !i.Config.PauseUntil.Equal(pauseForever) || !kept.Pause.Paused || kept.Pause.Resumed {
		t.Fatalf("kept: paused %v until %v; step %+v", i.Paused, i.Config.PauseUntil, kept.Pause)
	}
	if i := info(t, js, "ORDERS", "was"); !i.Paused || !i.Config.PauseUntil.Equal(until) || was.Pause.Paused || was.Pause.AlreadyPausedUntil == nil {
		t.Fatalf("was: paused %v until %v; step %+v", i.Paused, i.Config.PauseUntil, was.Pause)
	}
	for _, name := range []string{"kept", "was"} {
		if _, err := js.ResumeConsumer(testCtx(t), "ORDERS", name); err != nil {
			t.Fatal(err)
		}
		if got := fetch(t, js, "ORDERS", name, 1); len(got) != 1 || got[0] != 4 {
			t.Fatalf("%s: next delivery %v, want 4", name, got)
		}
	}
}

// TestPauseDrainTimeout: a delivery left unacknowledged keeps the wait
// going; after --drain-timeout the change is refused, nothing changed and
// the consumer resumed. With --force it is made anyway.
func TestPauseDrainTimeout(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 10, 0)
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "held"})
	fetch(t, js, "ORDERS", "held", 3)
	fetchNoAck(t, js, "ORDERS", "held", 2) // held by a client
	before := configWithoutStart(t, js, "ORDERS", "held")
	opts := Options{Pause: true, DrainTimeout: 300 * time.Millisecond}
	p := mustPlan(t, js, "ORDERS", []string{"held"}, Target{Kind: ToSeq, Seq: 2}, opts)
	err := Execute(testCtx(t), js, p, opts)
	if !errors.Is(err, jsutil.ErrConflict) || !strings.Contains(err.Error(), "2 delivered messages are still unacknowledged after 300ms") {
		t.Fatalf("got %v, want a conflict about 2 unacknowledged messages", err)
	}
	i := info(t, js, "ORDERS", "held")
	if i.Paused || i.Delivered.Stream != 5 || i.AckFloor.Stream != 3 || p.Changes[0].Applied || !p.Changes[0].Pause.Resumed {
		t.Fatalf("after the refusal: paused %v, delivered %d, ack floor %d, step %+v", i.Paused, i.Delivered.Stream, i.AckFloor.Stream, p.Changes[0].Pause)
	}
	sameConfig(t, before, configWithoutStart(t, js, "ORDERS", "held"))
	if u := intentsOf(t, js, "ORDERS", "held"); len(u) != 0 {
		t.Fatalf("intent records left: %+v", u)
	}
	opts.Force = true
	p = mustRun(t, js, "ORDERS", []string{"held"}, Target{Kind: ToSeq, Seq: 2}, opts)
	if w := strings.Join(p.Changes[0].Warnings, "; "); !strings.Contains(w, "2 delivered messages are still unacknowledged after 300ms; changed anyway") {
		t.Fatalf("forced: warnings %q", w)
	}
	if got := fetch(t, js, "ORDERS", "held", 1); len(got) != 1 || got[0] != 2 {
		t.Fatalf("next delivery %v, want 2", got)
	}
}

// TestPauseCrashAndRecover stops a paused change at every step as if jsctl
// died there: the consumer is left paused, at its old position or at the
// target, never half moved; recover finishes the change and resumes it.
func TestPauseCrashAndRecover(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 10, 0)
	cases := []struct {
		method        Method
		step          string
		state, action string
		at            uint64 // where the consumer is left: next delivery
	}{
		{Reset, "paused", StateOld, ActReset, 9},
		{Reset, "applied", StateTarget, ActRecord, 4},
		{Reset, "recorded", StateRecorded, ActClear, 4},
		{Reset, "waking", StateRecorded, ActClear, 0}, // its pause about to end
		{Recreate, "paused", StateOld, ActRecreate, 9},
		{Recreate, "deleted", StateMissing, ActCreate, 0},
		{Recreate, "created", StateTarget, ActRecord, 4},
		{Recreate, "recorded", StateRecorded, ActClear, 4},
	}
	for i, tc := range cases {
		t.Run(string(tc.method)+"/"+tc.step, func(t *testing.T) {
			name := fmt.Sprintf("paused%d", i)
			addConsumer(t, js, "ORDERS", rich(name))
			fetch(t, js, "ORDERS", name, 8)
			before := configWithoutStart(t, js, "ORDERS", name)
			opts := Options{Method: tc.method, Pause: true, crash: func(s string) bool { return s == tc.step }}
			p := mustPlan(t, js, "ORDERS", []string{name}, Target{Kind: ToSeq, Seq: 4}, opts)
			if err := Execute(testCtx(t), js, p, opts); !errors.Is(err, errCrashed) {
				t.Fatalf("execute: %v, want the simulated crash", err)
			}
			if tc.at > 0 {
				st, err := loadConsumer(testCtx(t), js, "ORDERS", name)
				if err != nil {
					t.Fatal(err)
				}
				if !st.info.Paused || st.info.AckFloor.Stream+1 != tc.at {
					t.Fatalf("left paused %v with next delivery %d, want paused at %d", st.info.Paused, st.info.AckFloor.Stream+1, tc.at)
				}
			}
			u := intentsOf(t, js, "ORDERS", name)
			if len(u) != 1 || !u[0].Paused || !strings.Contains(u[0].String(), "and it paused the consumer") {
				t.Fatalf("unfinished: %+v", u)
			}
			r, err := PlanRecover(testCtx(t), js, "ORDERS", []string{name}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			rc := r.Changes[0]
			if rc.State != tc.state || rc.Action != tc.action || !rc.Resume || !strings.HasSuffix(rc.Reason, "then resume it (the change paused it)") {
				t.Fatalf("recover plan: state %s, action %s, resume %v, reason %q; want %s, %s", rc.State, rc.Action, rc.Resume, rc.Reason, tc.state, tc.action)
			}
			if err := ExecuteRecover(testCtx(t), js, r, Options{}); err != nil {
				t.Fatalf("recover: %v", err)
			}
			if !rc.Done || !rc.Resumed {
				t.Fatalf("recover: done %v, resumed %v, warnings %v", rc.Done, rc.Resumed, rc.Warnings)
			}
			if info(t, js, "ORDERS", name).Paused {
				t.Fatal("left paused after recover")
			}
			sameConfig(t, before, configWithoutStart(t, js, "ORDERS", name))
			if got := fetch(t, js, "ORDERS", name, 1); len(got) != 1 || got[0] != 4 {
				t.Fatalf("next delivery %v, want 4", got)
			}
			wantHistory(t, js, "ORDERS", name, p.Changes[0].ChangeID)
			if u := intentsOf(t, js, "ORDERS", name); len(u) != 0 {
				t.Fatalf("intent records left: %+v", u)
			}
		})
	}
}
