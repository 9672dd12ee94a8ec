package reset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// position is a consumer's delivered and ack floor stream sequences.
func position(t testing.TB, js jetstream.JetStream, stream, name string) [2]uint64 {
	i := info(t, js, stream, name)
	return [2]uint64{i.Delivered.Stream, i.AckFloor.Stream}
}

func wantRefused(t *testing.T, js jetstream.JetStream, stream, name string, target Target, opts Options, words string) {
	t.Helper()
	before := position(t, js, stream, name)
	p := mustPlan(t, js, stream, []string{name}, target, opts)
	err := Execute(testCtx(t), js, p, opts)
	if !errors.Is(err, jsutil.ErrConflict) || !strings.Contains(err.Error(), words) {
		t.Fatalf("got %v, want a conflict saying %q", err, words)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("reset consumer %q on %q", name, stream)) {
		t.Fatalf("error does not name the consumer: %v", err)
	}
	if after := position(t, js, stream, name); after != before || p.Changes[0].Applied {
		t.Fatalf("consumer moved from %v to %v", before, after)
	}
}

func TestRefuseBusy(t *testing.T) {
	js := single(t)
	nc := js.Conn()
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 5, 0)
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "pull"})
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "push", DeliverSubject: "d.push", AckPolicy: jetstream.AckExplicitPolicy})
	fetch(t, js, "ORDERS", "pull", 5)

	// A pull request waits on an empty consumer.
	sub, _ := nc.SubscribeSync(nats.NewInbox())
	defer sub.Unsubscribe()
	if err := nc.PublishRequest("$JS.API.CONSUMER.MSG.NEXT.ORDERS.pull", sub.Subject, []byte(`{"batch":1,"expires":60000000000}`)); err != nil {
		t.Fatal(err)
	}
	testserver.WaitFor(t, 10*time.Second, "a waiting pull request", func() bool { return info(t, js, "ORDERS", "pull").NumWaiting > 0 })
	wantRefused(t, js, "ORDERS", "pull", Target{Kind: ToSeq, Seq: 2}, Options{}, "1 pull request is waiting")

	// A push subscriber is bound.
	psub, _ := nc.SubscribeSync("d.push")
	defer psub.Unsubscribe()
	testserver.WaitFor(t, 10*time.Second, "a bound push subscriber", func() bool { return info(t, js, "ORDERS", "push").PushBound })
	wantRefused(t, js, "ORDERS", "push", Target{Kind: ToSeq, Seq: 2}, Options{}, "push subscriber is bound")

	// --force moves them anyway.
	p := mustPlan(t, js, "ORDERS", []string{"pull"}, Target{Kind: ToSeq, Seq: 2}, Options{Force: true})
	if err := Execute(testCtx(t), js, p, Options{Force: true}); err != nil {
		t.Fatal(err)
	}
	if !p.Changes[0].Applied {
		t.Fatal("not applied")
	}
}

// TestRefuseForwardOnInterestAndWorkQueue: skipping messages on an
// interest or work-queue stream can remove them for good.
func TestRefuseForwardOnInterestAndWorkQueue(t *testing.T) {
	for _, ret := range []jetstream.RetentionPolicy{jetstream.InterestPolicy, jetstream.WorkQueuePolicy} {
		t.Run(retentionName(ret), func(t *testing.T) {
			js := single(t)
			addStream(t, js, "JOBS", ret, 1)
			addConsumer(t, js, "JOBS", jetstream.ConsumerConfig{Durable: "w"})
			publish(t, js, "jobs.a", 10, 0)
			fetch(t, js, "JOBS", "w", 2)
			wantRefused(t, js, "JOBS", "w", Target{Kind: ToSeq, Seq: 8}, Options{}, "skips 5 messages")
			recreateWords := "skips 8 messages"
			if ret == jetstream.WorkQueuePolicy {
				// Refused before anything else: the server takes no
				// consumer started by sequence there.
				recreateWords = "a work-queue stream takes only consumers with deliver policy all"
			}
			wantRefused(t, js, "JOBS", "w", Target{Kind: ToLatest}, Options{Method: Recreate}, recreateWords)
			// Backward (to what is left) is fine; forward with --force too.
			mustRun(t, js, "JOBS", []string{"w"}, Target{Kind: ToAckFloor}, Options{})
			mustRun(t, js, "JOBS", []string{"w"}, Target{Kind: ToSeq, Seq: 8}, Options{Force: true})
			if got := fetch(t, js, "JOBS", "w", 1); len(got) != 1 || got[0] != 8 {
				t.Fatalf("next %v, want 8", got)
			}
		})
	}
}

// TestInterestRecreateKeepsMessages: deleting the only consumer of an
// interest stream would drop its messages; a recreate must not.
func TestInterestRecreateKeepsMessages(t *testing.T) {
	js := single(t)
	addStream(t, js, "JOBS", jetstream.InterestPolicy, 1)
	addConsumer(t, js, "JOBS", jetstream.ConsumerConfig{Durable: "w"})
	publish(t, js, "jobs.a", 10, 0)
	fetch(t, js, "JOBS", "w", 3)
	mustRun(t, js, "JOBS", []string{"w"}, Target{Kind: ToAckFloor}, Options{Method: Recreate})
	s, _ := js.Stream(testCtx(t), "JOBS")
	si, _ := s.Info(testCtx(t))
	if si.State.Msgs != 7 || si.State.FirstSeq != 4 {
		t.Fatalf("stream holds %d messages from %d, want 7 from 4", si.State.Msgs, si.State.FirstSeq)
	}
	if got := fetch(t, js, "JOBS", "w", 10); len(got) != 7 || got[0] != 4 {
		t.Fatalf("got %v", got)
	}
	if n := len(consumerNames(t, js, "JOBS")); n != 1 {
		t.Fatalf("%d consumers left, want 1 (the holder must be gone)", n)
	}
}

func consumerNames(t testing.TB, js jetstream.JetStream, stream string) []string {
	s, _ := js.Stream(testCtx(t), stream)
	var out []string
	l := s.ConsumerNames(testCtx(t))
	for n := range l.Name() {
		out = append(out, n)
	}
	return out
}

// TestRecreateFailureRestores: a recreate that fails after the delete puts
// the consumer back at its old position with its configuration.
func TestRecreateFailureRestores(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 10, 0)
	for _, policy := range []jetstream.DeliverPolicy{jetstream.DeliverAllPolicy, jetstream.DeliverNewPolicy} {
		name := "r" + policy.String()
		addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: name, DeliverPolicy: policy, Description: "keep me", MaxDeliver: 3})
		publish(t, js, "orders.eu", 2, 0)
		fetch(t, js, "ORDERS", name, 1)
		before := configWithoutStart(t, js, "ORDERS", name)
		next := info(t, js, "ORDERS", name).AckFloor.Stream + 1
		opts := Options{Method: Recreate, beforeCreate: func() error { return errors.New("injected failure") }}
		p := mustPlan(t, js, "ORDERS", []string{name}, Target{Kind: ToSeq, Seq: 1}, opts)
		err := Execute(testCtx(t), js, p, opts)
		if err == nil || !strings.Contains(err.Error(), "injected failure") || !strings.Contains(err.Error(), "restored it at its old position") {
			t.Fatalf("got %v", err)
		}
		if !p.Changes[0].Restored {
			t.Fatal("not marked restored")
		}
		sameConfig(t, before, configWithoutStart(t, js, "ORDERS", name))
		if got := fetch(t, js, "ORDERS", name, 1); len(got) != 1 || got[0] != next {
			t.Fatalf("%s: next %v, want %d", name, got, next)
		}
	}
}

// TestFromFileRefusesMovedConsumer: a saved plan is applied as saved, but
// not to a consumer that moved meanwhile, and to each consumer once.
func TestFromFileRefusesMovedConsumer(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 10, 0)
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "a"})
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "b"})
	fetch(t, js, "ORDERS", "a", 5)
	fetch(t, js, "ORDERS", "b", 5)
	p := mustPlan(t, js, "ORDERS", []string{"a", "b"}, Target{Kind: ToSeq, Seq: 2}, Options{})
	data, _ := json.Marshal(p)

	saved, err := ReadPlan(data)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Replan(testCtx(t), js, saved, Options{})
	if err != nil || again.Err() != nil {
		t.Fatalf("replan: %v %v", err, again.Err())
	}

	// A plan naming a consumer twice (as an older jsctl wrote for
	// "consumer reset ORDERS a a") changes it once.
	twice := *saved
	twice.Changes = []*Change{saved.Changes[0], saved.Changes[0]}
	if again, err := Replan(testCtx(t), js, &twice, Options{}); err != nil || len(again.Changes) != 1 {
		t.Fatalf("replan of a consumer listed twice: %v, %d changes", err, len(again.Changes))
	}

	fetch(t, js, "ORDERS", "b", 1) // b moves on
	again, err = Replan(testCtx(t), js, saved, Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = Execute(testCtx(t), js, again, Options{})
	if !errors.Is(err, jsutil.ErrConflict) || !strings.Contains(err.Error(), "moved since the plan was made") {
		t.Fatalf("got %v", err)
	}
	if position(t, js, "ORDERS", "a") != [2]uint64{5, 5} {
		t.Fatal("consumer a changed although the plan was refused")
	}
	if _, err := ReadPlan([]byte(`{"stream":"ORDERS","changes":[{}]}`)); !errors.Is(err, jsutil.ErrBadInput) {
		t.Fatalf("bad plan: %v", err)
	}
}

// TestExecuteRefusesStalePlan: two plans of one consumer made at the same
// moment (two operators, or one waiting at the prompt while another runs).
// Once the first has moved the consumer back, the second is refused as
// moved since the plan was made (and nothing of it is written), with or
// without Force: a client never moves a consumer back. Under Force a
// client's progress since the plan is accepted, and the change is recorded
// from where the consumer really was, so --to-previous returns there.
func TestExecuteRefusesStalePlan(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 20, 0)
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "billing"})
	fetch(t, js, "ORDERS", "billing", 10)
	force := Options{Force: true}
	back := mustPlan(t, js, "ORDERS", []string{"billing"}, Target{Kind: ToSeq, Seq: 3}, Options{})
	fwd := mustPlan(t, js, "ORDERS", []string{"billing"}, Target{Kind: ToSeq, Seq: 15}, Options{})
	forced := mustPlan(t, js, "ORDERS", []string{"billing"}, Target{Kind: ToSeq, Seq: 15}, force)
	if err := Execute(testCtx(t), js, back, Options{}); err != nil {
		t.Fatal(err)
	}
	err := Execute(testCtx(t), js, fwd, Options{})
	want := `reset consumer "billing" on "ORDERS": moved since the plan was made (delivered 2, ack floor 2; the plan saw 10 and 10); nothing changed: plan again`
	if !errors.Is(err, jsutil.ErrConflict) || err.Error() != want {
		t.Fatalf("stale plan: got %v, want %s", err, want)
	}
	err = Execute(testCtx(t), js, forced, force)
	if !errors.Is(err, jsutil.ErrConflict) || !strings.Contains(err.Error(), "moved back since the plan was made (delivered 2, ack floor 2; the plan saw 10 and 10)") {
		t.Fatalf("stale plan under force: got %v", err)
	}
	if got := position(t, js, "ORDERS", "billing"); got != [2]uint64{2, 2} {
		t.Fatalf("a refused change moved the consumer to %v", got)
	}
	if u, err := ListUnfinished(testCtx(t), js, "", "ORDERS"); err != nil || len(u) != 0 {
		t.Fatalf("a refused change left intents %v (%v)", u, err)
	}

	live := mustPlan(t, js, "ORDERS", []string{"billing"}, Target{Kind: ToSeq, Seq: 15}, force)
	fetch(t, js, "ORDERS", "billing", 3) // a client takes 3..5
	if err := Execute(testCtx(t), js, live, force); err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(live.Changes[0].Warnings, "; "); !strings.Contains(w, "a client moved it on since the plan was made (delivered 5, ack floor 5; planned from 2 and 2)") {
		t.Fatalf("warnings %q", w)
	}
	h, err := History(testCtx(t), js, "", "ORDERS", "billing")
	if err != nil || len(h) != 2 || h[1].From.AckFloor != 5 {
		t.Fatalf("history %+v (%v); want two changes, the second from ack floor 5", h, err)
	}
	undo := mustPlan(t, js, "ORDERS", []string{"billing"}, Target{Kind: ToPrevious}, Options{})
	if got := undo.Changes[0].To.Sequence; got != 6 {
		t.Fatalf("--to-previous goes to %d, want 6", got)
	}
}

// TestClampAndErrors: targets outside the stream are clamped with a
// warning; unknown consumers and streams are named in not-found errors.
func TestClampAndErrors(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 10, 0)
	s, _ := js.Stream(testCtx(t), "ORDERS")
	if err := s.Purge(testCtx(t), jetstream.WithPurgeSequence(4)); err != nil {
		t.Fatal(err)
	}
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "c"})
	p := mustRun(t, js, "ORDERS", []string{"c"}, Target{Kind: ToSeq, Seq: 1}, Options{})
	if c := p.Changes[0]; c.To.Sequence != 4 || len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "before the stream's first message") {
		t.Fatalf("%+v", c)
	}
	p = mustRun(t, js, "ORDERS", []string{"c"}, Target{Kind: ToSeq, Seq: 99}, Options{})
	// Clamped to the end, and warned as a move forward past 7 messages
	// c never received.
	if c := p.Changes[0]; c.To.Sequence != 11 || len(c.Warnings) != 2 || cnt(c.NeverDelivered) != 7 || !strings.Contains(c.Warnings[1], "skips 7 messages it never received") {
		t.Fatalf("%+v", c)
	}
	_, err := NewPlan(testCtx(t), js, "ORDERS", []string{"billing"}, false, Target{Kind: ToSeq, Seq: 1}, Options{})
	if !errors.Is(err, jsutil.ErrNotFound) || err.Error() != `reset consumer "billing" on "ORDERS": consumer not found` {
		t.Fatalf("got %v", err)
	}
	_, err = NewPlan(testCtx(t), js, "NOPE", []string{"billing"}, false, Target{Kind: ToSeq, Seq: 1}, Options{})
	if !errors.Is(err, jsutil.ErrNotFound) || !strings.Contains(err.Error(), `"NOPE"`) {
		t.Fatalf("got %v", err)
	}
}

// TestFallbackWithoutResetAPI: on a server without the reset API, auto
// recreates; --method reset reports the failure.
func TestFallbackWithoutResetAPI(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 10, 0)
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "a"})
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "b"})
	calls := 0
	old := func(ctx context.Context, js jetstream.JetStream, stream, consumer string, seq uint64) (*resetReply, error) {
		calls++
		return nil, nats.ErrNoResponders
	}
	opts := Options{inPlace: old}
	p := mustRun(t, js, "ORDERS", nil, Target{Kind: ToSeq, Seq: 3}, opts)
	for _, c := range p.Changes {
		if c.Method != Recreate || !strings.Contains(c.Reason, "no consumer reset API") {
			t.Fatalf("%s: %s (%s)", c.Consumer, c.Method, c.Reason)
		}
	}
	// Asked twice for the first consumer (to be sure), never again.
	if calls != 2 {
		t.Fatalf("reset API tried %d times, want twice", calls)
	}
	opts.Method = Reset
	p = mustPlan(t, js, "ORDERS", []string{"a"}, Target{Kind: ToSeq, Seq: 5}, Options{Method: Reset})
	if err := Execute(testCtx(t), js, p, opts); err == nil {
		t.Fatal("forced reset succeeded without the API")
	}
	// --method reset where the policy forbids it is refused in the plan.
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "n", DeliverPolicy: jetstream.DeliverNewPolicy})
	p = mustPlan(t, js, "ORDERS", []string{"n"}, Target{Kind: ToSeq, Seq: 5}, Options{Method: Reset})
	if err := p.Err(); !errors.Is(err, jsutil.ErrConflict) {
		t.Fatalf("got %v", err)
	}
}

// TestShiftByClamps: a shift past either end of the stream lands on its
// first message or its end, however large (no int64 overflow turning a
// forward shift into a rewind).
func TestShiftByClamps(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 10, 0)
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "c"})
	fetch(t, js, "ORDERS", "c", 5)
	for _, tc := range []struct {
		shift int64
		want  uint64
		warn  string
	}{
		{math.MaxInt64, 11, "past the stream's end"},
		{math.MaxInt64 - 3, 11, "past the stream's end"},
		{math.MinInt64, 1, "before sequence 1"},
		{-6, 1, "before sequence 1"},
		{-5, 1, ""},
		{3, 9, ""},
	} {
		p := mustPlan(t, js, "ORDERS", []string{"c"}, Target{Kind: ShiftBy, Shift: tc.shift}, Options{})
		c := p.Changes[0]
		warned := strings.Join(c.Warnings, "\n")
		if c.To.Sequence != tc.want || tc.warn == "" && warned != "" || !strings.Contains(warned, tc.warn) {
			t.Errorf("shift by %d from ack floor 5: target %d, warnings %q; want %d, warning %q", tc.shift, c.To.Sequence, warned, tc.want, tc.warn)
		}
	}
}

// TestRecreateRefusedOnWorkQueue: a work-queue stream takes only consumers
// with deliver policy all, so a recreate (which starts the consumer by
// sequence or time) is refused in the plan, even with --force; before,
// executing it deleted the consumer, failed to create it and put it back.
func TestRecreateRefusedOnWorkQueue(t *testing.T) {
	js := single(t)
	addStream(t, js, "JOBS", jetstream.WorkQueuePolicy, 1)
	addConsumer(t, js, "JOBS", jetstream.ConsumerConfig{Durable: "w", Description: "keep me"})
	publish(t, js, "jobs.a", 10, 0)
	fetchNoAck(t, js, "JOBS", "w", 3)
	before := info(t, js, "JOBS", "w")
	opts := Options{Method: Recreate, Force: true}
	p := mustPlan(t, js, "JOBS", []string{"w"}, Target{Kind: ToAckFloor}, opts)
	if c := p.Changes[0]; !strings.Contains(c.Refused, "work-queue stream takes only consumers with deliver policy all") {
		t.Fatalf("plan: %s, refused %q", c.Method, c.Refused)
	}
	err := Execute(testCtx(t), js, p, opts)
	if !errors.Is(err, jsutil.ErrConflict) || !strings.Contains(err.Error(), `reset consumer "w" on "JOBS": a work-queue stream`) ||
		!strings.Contains(err.Error(), "--method reset") {
		t.Fatalf("got %v, want a refusal naming the consumer, the reason and the fix", err)
	}
	after := info(t, js, "JOBS", "w")
	if !after.Created.Equal(before.Created) || p.Changes[0].Applied || p.Changes[0].Restored {
		t.Fatalf("consumer touched: created %v -> %v, %+v", before.Created, after.Created, p.Changes[0])
	}
	// Auto moves it in place.
	mustRun(t, js, "JOBS", []string{"w"}, Target{Kind: ToAckFloor}, Options{})
	// Nor does auto fall back to a recreate there on a server without
	// the reset API: the change fails with the consumer untouched.
	noAPI := func(ctx context.Context, js jetstream.JetStream, stream, consumer string, seq uint64) (*resetReply, error) {
		return nil, nats.ErrNoResponders
	}
	opts = Options{inPlace: noAPI}
	p = mustPlan(t, js, "JOBS", []string{"w"}, Target{Kind: ToAckFloor}, opts)
	if err := Execute(testCtx(t), js, p, opts); err == nil || p.Changes[0].Method != Reset ||
		!strings.Contains(strings.Join(p.Changes[0].Warnings, "\n"), "no recreate to fall back to") {
		t.Fatalf("without the reset API: %v, %s, warnings %v", err, p.Changes[0].Method, p.Changes[0].Warnings)
	}
	if after := info(t, js, "JOBS", "w"); !after.Created.Equal(before.Created) {
		t.Fatalf("consumer recreated: created %v -> %v", before.Created, after.Created)
	}
}

// TestAckFloorMovedSincePlan: a reset back to the ack floor of a consumer
// whose deliver policy allows no other sequence is made with the server's
// own reset to the ack floor only while that floor is still the target.
// Once a client has acknowledged more since the plan, auto recreates it at
// the planned target instead, and --method reset is refused by the server:
// a conflict (exit 5), with nothing changed. (A client's progress since
// the plan is accepted under Force; without it the change is refused as
// moved, see TestExecuteRefusesStalePlan.)
func TestAckFloorMovedSincePlan(t *testing.T) {
	for _, method := range []Method{Auto, Reset} {
		t.Run(string(method), func(t *testing.T) {
			js := single(t)
			addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
			addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "c", DeliverPolicy: jetstream.DeliverNewPolicy})
			publish(t, js, "orders.eu", 10, 0)
			fetch(t, js, "ORDERS", "c", 3)
			opts := Options{Method: method, Force: true}
			p := mustPlan(t, js, "ORDERS", []string{"c"}, Target{Kind: ToAckFloor}, opts)
			if c := p.Changes[0]; c.Method != Reset || c.To.Sequence != 4 {
				t.Fatalf("plan: %s to %d", c.Method, c.To.Sequence)
			}
			fetch(t, js, "ORDERS", "c", 2) // the ack floor moves to 5
			err := Execute(testCtx(t), js, p, opts)
			c := p.Changes[0]
			if method == Reset {
				if !errors.Is(err, jsutil.ErrConflict) || !strings.Contains(err.Error(), "does not allow an in-place reset to sequence 4") {
					t.Fatalf("got %v, want a conflict", err)
				}
				if got := position(t, js, "ORDERS", "c"); got != [2]uint64{5, 5} {
					t.Fatalf("consumer moved to %v", got)
				}
				return
			}
			if err != nil || c.Method != Recreate || !c.Verified {
				t.Fatalf("execute: %v; %s verified %v %v", err, c.Method, c.Verified, c.Warnings)
			}
			if got := fetch(t, js, "ORDERS", "c", 1); len(got) != 1 || got[0] != 4 {
				t.Fatalf("next delivery %v, want 4", got)
			}
		})
	}
}
