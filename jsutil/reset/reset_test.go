package reset

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// TestTargets moves a pull consumer to every kind of target, in place and by
// recreate, and checks what a plain client receives next.
func TestTargets(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	seqs := publish(t, js, "orders.eu", 10, 2*time.Millisecond)
	times := make([]time.Time, len(seqs)+1)
	s, _ := js.Stream(testCtx(t), "ORDERS")
	for _, q := range seqs {
		m, err := s.GetMsg(testCtx(t), q)
		if err != nil {
			t.Fatal(err)
		}
		times[q] = m.Time
	}
	cases := []struct {
		name   string
		target Target
		want   uint64
	}{
		{"seq", Target{Kind: ToSeq, Seq: 4}, 4},
		{"shift back", Target{Kind: ShiftBy, Shift: -3}, 4},
		{"shift forward", Target{Kind: ShiftBy, Shift: 1}, 8},
		{"earliest", Target{Kind: ToEarliest}, 1},
		{"latest", Target{Kind: ToLatest}, 11},
		{"ack floor", Target{Kind: ToAckFloor}, 7},
		{"time after", Target{Kind: ToTime, Time: times[5].Add(-time.Microsecond)}, 5},
		{"time before", Target{Kind: ToTime, Time: times[5].Add(time.Microsecond), Mode: ModeBefore}, 5},
		{"time nearest", Target{Kind: ToTime, Time: times[5].Add(time.Microsecond), Mode: ModeNearest}, 5},
		{"duration", Target{Kind: ByDuration, Duration: time.Hour}, 1},
	}
	for _, m := range []Method{Reset, Recreate} {
		for _, tc := range cases {
			t.Run(string(m)+"/"+tc.name, func(t *testing.T) {
				name := "c" + string(m[:3]) + time.Now().Format("150405.000000000")[7:]
				addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: name})
				fetch(t, js, "ORDERS", name, 6)          // acked 1..6
				_ = fetchNoAck(t, js, "ORDERS", name, 1) // 7 delivered, not acked
				p := mustRun(t, js, "ORDERS", []string{name}, tc.target, Options{Method: m})
				c := p.Changes[0]
				if c.To.Sequence != tc.want || c.Method != m {
					t.Fatalf("to %d by %s, want %d by %s (%+v)", c.To.Sequence, c.Method, tc.want, m, c)
				}
				if c.From.Delivered != 7 || c.From.AckFloor != 6 {
					t.Fatalf("from %+v", c.From)
				}
				got := fetch(t, js, "ORDERS", name, 1)
				if tc.want > 10 {
					if len(got) != 0 {
						t.Fatalf("got %v, want nothing", got)
					}
					return
				}
				if len(got) != 1 || got[0] != tc.want {
					t.Fatalf("next delivery %v, want %d", got, tc.want)
				}
			})
		}
	}
}

// TestDeliverPolicies checks the method auto picks for every deliver policy
// and that each consumer ends at the target.
func TestDeliverPolicies(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 5, 2*time.Millisecond)
	publish(t, js, "orders.us", 5, 2*time.Millisecond)
	s, _ := js.Stream(testCtx(t), "ORDERS")
	m3, _ := s.GetMsg(testCtx(t), 3)
	start := m3.Time
	cases := []struct {
		name   string
		cfg    jetstream.ConsumerConfig
		target uint64
		method Method
	}{
		{"all", jetstream.ConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}, 2, Reset},
		{"new", jetstream.ConsumerConfig{DeliverPolicy: jetstream.DeliverNewPolicy}, 2, Recreate},
		{"last", jetstream.ConsumerConfig{DeliverPolicy: jetstream.DeliverLastPolicy}, 2, Recreate},
		{"last per subject", jetstream.ConsumerConfig{DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy, FilterSubject: "orders.*"}, 2, Recreate},
		{"by seq above", jetstream.ConsumerConfig{DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: 3}, 4, Reset},
		{"by seq below", jetstream.ConsumerConfig{DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: 3}, 2, Recreate},
		{"by time above", jetstream.ConsumerConfig{DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &start}, 4, Reset},
		{"by time below", jetstream.ConsumerConfig{DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &start}, 2, Recreate},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := "p" + string(rune('a'+i))
			tc.cfg.Durable = name
			addConsumer(t, js, "ORDERS", tc.cfg)
			before := configWithoutStart(t, js, "ORDERS", name)
			p := mustRun(t, js, "ORDERS", []string{name}, Target{Kind: ToSeq, Seq: tc.target}, Options{})
			if c := p.Changes[0]; c.Method != tc.method {
				t.Fatalf("method %s (%s), want %s", c.Method, c.Reason, tc.method)
			}
			if got := fetch(t, js, "ORDERS", name, 1); len(got) != 1 || got[0] != tc.target {
				t.Fatalf("next delivery %v, want %d", got, tc.target)
			}
			sameConfig(t, before, configWithoutStart(t, js, "ORDERS", name))
			// Back to the ack floor is in place for every policy.
			p = mustRun(t, js, "ORDERS", []string{name}, Target{Kind: ToAckFloor}, Options{})
			if c := p.Changes[0]; c.Method != Reset {
				t.Fatalf("ack floor: method %s (%s), want reset", c.Method, c.Reason)
			}
		})
	}
}

// TestRecreateKeepsConfig recreates pull and push consumers with every
// kind of setting and compares the whole configuration before and after.
func TestRecreateKeepsConfig(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 5, 0)
	publish(t, js, "orders.us", 5, 0)
	pause := time.Now().Add(time.Hour).UTC()
	pull := jetstream.ConsumerConfig{
		Durable: "pull", Description: "the billing worker", DeliverPolicy: jetstream.DeliverNewPolicy,
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: 45 * time.Second, MaxDeliver: 7,
		BackOff: []time.Duration{time.Second, 5 * time.Second}, FilterSubjects: []string{"orders.eu", "orders.us"},
		ReplayPolicy: jetstream.ReplayInstantPolicy, SampleFrequency: "50%", MaxWaiting: 64, MaxAckPending: 100,
		HeadersOnly: true, MaxRequestBatch: 10, MaxRequestExpires: time.Minute, MaxRequestMaxBytes: 1 << 20,
		InactiveThreshold: time.Hour, MemoryStorage: true, Metadata: map[string]string{"team": "billing"},
		PauseUntil: &pause, PriorityPolicy: jetstream.PriorityPolicyOverflow, PriorityGroups: []string{"jobs"},
	}
	push := jetstream.ConsumerConfig{
		Durable: "push", DeliverSubject: "deliver.billing", DeliverGroup: "workers", FilterSubject: "orders.eu",
		AckPolicy: jetstream.AckAllPolicy, FlowControl: true, IdleHeartbeat: 5 * time.Second,
		RateLimit: 1 << 20, DeliverPolicy: jetstream.DeliverLastPolicy, Metadata: map[string]string{"a": "b"},
	}
	for _, cfg := range []jetstream.ConsumerConfig{pull, push} {
		t.Run(cfg.Durable, func(t *testing.T) {
			addConsumer(t, js, "ORDERS", cfg)
			before := configWithoutStart(t, js, "ORDERS", cfg.Durable)
			p := mustRun(t, js, "ORDERS", []string{cfg.Durable}, Target{Kind: ToSeq, Seq: 2}, Options{})
			if p.Changes[0].Method != Recreate {
				t.Fatalf("method %s, want recreate", p.Changes[0].Method)
			}
			sameConfig(t, before, configWithoutStart(t, js, "ORDERS", cfg.Durable))
			if i := info(t, js, "ORDERS", cfg.Durable); i.Config.OptStartSeq != 2 || i.Config.DeliverPolicy != jetstream.DeliverByStartSequencePolicy {
				t.Fatalf("start: %v %d", i.Config.DeliverPolicy, i.Config.OptStartSeq)
			}
		})
	}
}

// TestTimeTargetMatchesSeek: after a reset by time, a plain client
// receives exactly the message seek names, with filters too, in place and
// by recreate (which starts the consumer by time).
func TestTimeTargetMatchesSeek(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	for i := 0; i < 4; i++ {
		publish(t, js, "orders.eu", 1, 0)
		time.Sleep(3 * time.Millisecond)
		publish(t, js, "orders.us", 1, 0)
		time.Sleep(3 * time.Millisecond)
	}
	s, _ := js.Stream(testCtx(t), "ORDERS")
	m4, _ := s.GetMsg(testCtx(t), 4) // orders.us
	at := m4.Time.Add(time.Microsecond)
	cases := []struct {
		name    string
		filters []string
		method  Method
	}{
		{"none/reset", nil, Reset},
		{"none/recreate", nil, Recreate},
		{"single/reset", []string{"orders.eu"}, Reset},
		{"single/recreate", []string{"orders.eu"}, Recreate},
		{"multi/recreate", []string{"orders.eu", "orders.us"}, Recreate},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := "t" + string(rune('a'+i))
			cfg := jetstream.ConsumerConfig{Durable: name, FilterSubjects: tc.filters}
			addConsumer(t, js, "ORDERS", cfg)
			fetch(t, js, "ORDERS", name, 8)
			subject := ""
			if len(tc.filters) == 1 {
				subject = tc.filters[0]
			}
			want, _, err := DefaultSeek(testCtx(t), js, "ORDERS", at, ModeAfter, subject)
			if err != nil {
				t.Fatal(err)
			}
			p := mustRun(t, js, "ORDERS", []string{name}, Target{Kind: ToTime, Time: at}, Options{Method: tc.method})
			if p.Changes[0].To.Sequence != want {
				t.Fatalf("planned %d, seek says %d", p.Changes[0].To.Sequence, want)
			}
			if got := fetch(t, js, "ORDERS", name, 1); len(got) != 1 || got[0] != want {
				t.Fatalf("next delivery %v, seek says %d", got, want)
			}
			if tc.method == Recreate {
				if i := info(t, js, "ORDERS", name); i.Config.DeliverPolicy != jetstream.DeliverByStartTimePolicy {
					t.Fatalf("recreated with %v, want by start time", i.Config.DeliverPolicy)
				}
			}
		})
	}
}

// TestAllAndHistory moves every consumer of a stream, then undoes one.
func TestAllAndHistory(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 10, 0)
	for _, n := range []string{"a", "b", "c"} {
		addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: n})
		fetch(t, js, "ORDERS", n, 9)
	}
	p := mustRun(t, js, "ORDERS", nil, Target{Kind: ToSeq, Seq: 2}, Options{User: "ops", Host: "box"})
	if len(p.Changes) != 3 {
		t.Fatalf("%d changes, want 3", len(p.Changes))
	}
	for _, c := range p.Changes {
		if cnt(c.Redeliver) != 8 {
			t.Fatalf("%s: redeliver %d, want 8", c.Consumer, cnt(c.Redeliver))
		}
	}
	fetch(t, js, "ORDERS", "b", 1) // b: ack floor 2
	p = mustRun(t, js, "ORDERS", []string{"b"}, Target{Kind: ToPrevious}, Options{})
	if c := p.Changes[0]; c.To.Sequence != 10 || c.UndoOf == 0 {
		t.Fatalf("undo: %+v", c)
	}
	h, err := History(testCtx(t), js, "", "ORDERS", "b")
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 2 || h[0].User != "ops" || h[0].Host != "box" || h[0].From.AckFloor != 9 || h[0].To.Sequence != 2 ||
		h[1].UndoOf != h[0].Revision || h[1].From.AckFloor != 2 || h[1].To.Sequence != 10 {
		t.Fatalf("history: %+v", h)
	}
	if got := fetch(t, js, "ORDERS", "b", 5); len(got) != 1 || got[0] != 10 {
		t.Fatalf("after undo: %v", got)
	}
	if _, err := NewPlan(testCtx(t), js, "ORDERS", []string{"a2"}, false, Target{Kind: ToPrevious}, Options{}); err == nil {
		t.Fatal("undo of an unknown consumer succeeded")
	}
}

// TestPushInPlace resets a push consumer in place: its subscriber then
// receives the target first.
func TestPushInPlace(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 5, 0)
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "push", DeliverSubject: "d.push", AckPolicy: jetstream.AckExplicitPolicy})
	// An ephemeral consumer is left alone by --all.
	if _, err := js.OrderedConsumer(testCtx(t), "ORDERS", jetstream.OrderedConsumerConfig{}); err != nil {
		t.Fatal(err)
	}
	p := mustRun(t, js, "ORDERS", nil, Target{Kind: ToSeq, Seq: 3}, Options{})
	if len(p.Changes) != 1 || p.Changes[0].Method != Reset || !p.Changes[0].Push || len(p.Skipped) != 1 {
		t.Fatalf("changes %+v, skipped %v", p.Changes, p.Skipped)
	}
	sub, err := js.Conn().SubscribeSync("d.push")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	m, err := sub.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	md, err := m.Metadata()
	if err != nil || md.Sequence.Stream != 3 {
		t.Fatalf("first push delivery %+v (%v), want sequence 3", md, err)
	}
}

// TestUndoRestoresPolicy: undoing a recreate brings back the consumer's
// original deliver policy, not only its position.
func TestUndoRestoresPolicy(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 10, 0)
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "a", Description: "keep"})
	fetch(t, js, "ORDERS", "a", 3)
	before := configWithoutStart(t, js, "ORDERS", "a")
	mustRun(t, js, "ORDERS", []string{"a"}, Target{Kind: ToSeq, Seq: 6}, Options{Method: Recreate})
	if i := info(t, js, "ORDERS", "a"); i.Config.DeliverPolicy != jetstream.DeliverByStartSequencePolicy {
		t.Fatalf("policy %v", i.Config.DeliverPolicy)
	}
	p := mustRun(t, js, "ORDERS", []string{"a"}, Target{Kind: ToPrevious}, Options{})
	c := p.Changes[0]
	if c.Method != Recreate || c.RestoreStart == nil || c.To.Sequence != 4 {
		t.Fatalf("undo: %+v", c)
	}
	if i := info(t, js, "ORDERS", "a"); i.Config.DeliverPolicy != jetstream.DeliverAllPolicy {
		t.Fatalf("policy after undo %v, want all", i.Config.DeliverPolicy)
	}
	sameConfig(t, before, configWithoutStart(t, js, "ORDERS", "a"))
	if got := fetch(t, js, "ORDERS", "a", 1); len(got) != 1 || got[0] != 4 {
		t.Fatalf("after undo: %v", got)
	}
	// Undoing the undo brings back the start by sequence 6 too.
	p = mustRun(t, js, "ORDERS", []string{"a"}, Target{Kind: ToPrevious}, Options{})
	if c := p.Changes[0]; c.Method != Recreate || c.To.Sequence != 6 {
		t.Fatalf("undo of the undo: %+v", c)
	}
	if i := info(t, js, "ORDERS", "a"); i.Config.DeliverPolicy != jetstream.DeliverByStartSequencePolicy || i.Config.OptStartSeq != 6 {
		t.Fatalf("policy after undoing the undo: %v %d", i.Config.DeliverPolicy, i.Config.OptStartSeq)
	}
}

// TestUndoOfCreateRefused: a consumer whose last recorded change created it
// (a snapshot restore, PlanMoves) had no position before it, so
// --to-previous is refused (even with --force) naming the consumer, why,
// and what to do, instead of moving it to sequence 1 and replaying the
// whole stream. Once it is deleted again, there is nothing to rebuild.
func TestUndoOfCreateRefused(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 10, 0)
	addConsumer(t, js, "ORDERS", rich("fresh"))
	saved, err := loadConsumer(testCtx(t), js, "ORDERS", "fresh")
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteConsumer(testCtx(t), "ORDERS", "fresh"); err != nil {
		t.Fatal(err)
	}
	p, err := PlanMoves(testCtx(t), js, "ORDERS", []Move{{Consumer: "fresh", Seq: 8, Config: saved.raw.json()}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := Execute(testCtx(t), js, p, Options{}); err != nil {
		t.Fatal(err)
	}
	opts := Options{Force: true}
	u := mustPlan(t, js, "ORDERS", []string{"fresh"}, Target{Kind: ToPrevious}, opts)
	c := u.Changes[0]
	if !strings.Contains(c.Refused, "created it, so it has no earlier position to go back to") || !strings.Contains(c.Refused, "delete the consumer") {
		t.Fatalf("undo of a create: %s to %d, refused %q", c.Method, c.To.Sequence, c.Refused)
	}
	err = Execute(testCtx(t), js, u, opts)
	if !errors.Is(err, jsutil.ErrConflict) || !strings.HasPrefix(err.Error(), `reset consumer "fresh" on "ORDERS": its last recorded change`) {
		t.Fatalf("got %v", err)
	}
	if got := position(t, js, "ORDERS", "fresh"); got != [2]uint64{7, 7} {
		t.Fatalf("consumer moved to %v", got)
	}
	if err := js.DeleteConsumer(testCtx(t), "ORDERS", "fresh"); err != nil {
		t.Fatal(err)
	}
	_, err = NewPlan(testCtx(t), js, "ORDERS", []string{"fresh"}, false, Target{Kind: ToPrevious}, Options{})
	if !errors.Is(err, jsutil.ErrNotFound) || !strings.Contains(err.Error(), "created it: without that change it does not exist") {
		t.Fatalf("rebuild after undoing a create: %v", err)
	}
}
