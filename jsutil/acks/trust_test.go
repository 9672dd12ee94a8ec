package acks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go/jetstream"
)

// Two consumers with different filters share one scope. The first one's
// floor must not make the second skip its own messages: each handler runs
// once for each of its consumer's messages. (Before floors were per
// consumer, cb handled 1 of its 10 messages and acked 9 as duplicates.)
func TestSharedScopeFloorsAreConsumersOwn(t *testing.T) {
	js := newJS(t, testserver.Start(t))
	ctx := testCtx(t, 60*time.Second)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 10; i++ {
		publish(t, js, "s.a", i, 1)
		publish(t, js, "s.b", i, 1)
	}
	st, err := acks.Open(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	scope := acks.ScopeName("S.shared")
	run := func(name, filter string) (acks.Summary, map[uint64]int) {
		t.Helper()
		cons := addConsumer(t, js, "S", name, 30*time.Second, func(c *jetstream.ConsumerConfig) { c.FilterSubject = filter + ".>" })
		tl := newTally()
		sum, err := st.Consume(ctx, cons, tl.handler(nil), acks.WithScope(scope), acks.WithMaxMessages(10))
		if err != nil {
			t.Fatal(err)
		}
		return sum, tl.snapshot()
	}
	sumA, runsA := run("ca", "s.a")
	if sumA.Processed != 10 || len(runsA) != 10 || sumA.Floor != 19 {
		t.Fatalf("ca: %+v, ran %d", sumA, len(runsA))
	}
	sumB, runsB := run("cb", "s.b")
	t.Logf("ca: processed %d, floor %d; cb: processed %d, duplicates %d", sumA.Processed, sumA.Floor, sumB.Processed, sumB.Duplicates)
	if sumB.Processed != 10 || sumB.Duplicates != 0 || len(runsB) != 10 {
		t.Fatalf("cb: %+v, its handler ran for %d of its 10 messages", sumB, len(runsB))
	}
	for seq, n := range runsB {
		if seq%2 != 0 || n != 1 {
			t.Errorf("cb ran message %d %d times", seq, n)
		}
	}
	floors, err := st.Floors(ctx, scope)
	if err != nil || len(floors) != 2 {
		t.Fatalf("floors of the shared scope: %+v %v", floors, err)
	}
}

// A floor written by hand past the stream's last sequence is corrupt: the
// next run ignores it (and says so) and runs every message; acks stats
// reports it.
func TestForgedFloorIsIgnored(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t, 60*time.Second)
	publish(t, f.js, "orders", 1, 90)
	cons := addConsumer(t, f.js, "ORDERS", "c", 30*time.Second)
	forged, _ := json.Marshal(map[string]any{"st": "ORDERS", "c": "c", "rg": []map[string]any{{"b": 0, "e": 1000000}}})
	if _, err := f.st.KV().Put(ctx, "f.ORDERS.c.cORDERS/c", forged); err != nil {
		t.Fatal(err)
	}
	st, err := f.st.Stats(ctx, "ORDERS.c")
	if err != nil || st.CorruptFloors != 1 || st.Floor != 0 || !strings.Contains(st.Floors[0].Corrupt, "past the stream's last sequence 90") {
		t.Fatalf("stats of a forged floor: %+v %v", st, err)
	}
	tl := newTally()
	sum, err := f.st.Consume(ctx, cons, tl.handler(nil), acks.WithMaxMessages(90))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("forged floor 1000000 over 90 messages: processed %d, skipped %d; warnings %q", sum.Processed, sum.Duplicates, sum.Warnings)
	tl.exactlyOnce(t, 90)
	if sum.Duplicates != 0 || len(sum.Warnings) == 0 || !strings.Contains(sum.Warnings[0], "corrupt") {
		t.Fatalf("summary: %+v", sum)
	}
}

// A handler that cannot run for a message (CannotRun) backs off with a
// growing delay and, after the bound, the message is terminated and
// recorded as failed with the reason. No hot loop: five deliveries in all.
func TestCannotRunBacksOffAndTerminates(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t, 60*time.Second)
	publish(t, f.js, "orders", 1, 1)
	cons := addConsumer(t, f.js, "ORDERS", "c", 30*time.Second)
	var mu sync.Mutex
	var at []time.Time
	h := func(ctx context.Context, d acks.Delivery) error {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		return acks.CannotRun(errors.New("key cannot be passed"))
	}
	var final atomic.Bool
	sum, err := f.st.Consume(ctx, cons, h, acks.WithRetryDelay(100*time.Millisecond), acks.WithIdle(3*time.Second),
		acks.OnResult(func(r acks.Result) { final.Store(final.Load() || r.Final) }))
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(at) != acks.DefaultMaxCannotRun || !final.Load() || sum.Terminated != 1 || sum.Failed != 1 || sum.FailedDeliveries != len(at) {
		t.Fatalf("%d deliveries, final %v, summary %+v", len(at), final.Load(), sum)
	}
	for i := 1; i < len(at); i++ {
		gap, want := at[i].Sub(at[i-1]), 100*time.Millisecond<<(i-1)
		if gap < want {
			t.Errorf("delivery %d came %v after the one before, want at least %v", i+1, gap, want)
		}
	}
	r, err := f.st.Get(ctx, "ORDERS.c", acks.KeyFromSequence, "1")
	if err != nil || r.State != acks.StateFailed || r.Reason != "key cannot be passed" {
		t.Fatalf("record: %+v %v", r, err)
	}
}

// A handler that always fails is redelivered with a growing delay (never in
// a tight loop), until WithMaxFailures ends it.
func TestFailingHandlerBacksOff(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t, 60*time.Second)
	publish(t, f.js, "orders", 1, 1)
	cons := addConsumer(t, f.js, "ORDERS", "c", 30*time.Second)
	var runs atomic.Int32
	h := func(context.Context, acks.Delivery) error { runs.Add(1); return fmt.Errorf("exit status 1") }
	start := time.Now()
	sum, err := f.st.Consume(ctx, cons, h, acks.WithRetryDelay(100*time.Millisecond), acks.WithMaxFailures(4), acks.WithIdle(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if runs.Load() != 4 || sum.Terminated != 1 || time.Since(start) < 700*time.Millisecond {
		t.Fatalf("%d runs in %v: %+v", runs.Load(), time.Since(start), sum)
	}
	r, err := f.st.Get(ctx, "ORDERS.c", acks.KeyFromSequence, "1")
	if err != nil || r.State != acks.StateFailed || r.Reason != "exit status 1" {
		t.Fatalf("record: %+v %v", r, err)
	}
}

// A corrupt record stops its message from being handled; after the bound
// a failed record naming the corruption replaces it and the message is
// terminated, instead of being redelivered forever.
func TestCorruptRecordEndsAfterBound(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t, 60*time.Second)
	publish(t, f.js, "orders", 1, 1)
	cons := addConsumer(t, f.js, "ORDERS", "c", 30*time.Second)
	if _, err := f.st.KV().PutString(ctx, "r.ORDERS.c.s1", "{not json"); err != nil {
		t.Fatal(err)
	}
	var ran atomic.Bool
	sum, err := f.st.Consume(ctx, cons, func(context.Context, acks.Delivery) error { ran.Store(true); return nil },
		acks.WithRetryDelay(100*time.Millisecond), acks.WithMaxCannotRun(3), acks.WithIdle(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if ran.Load() || sum.FailedDeliveries != 3 || sum.Terminated != 1 {
		t.Fatalf("ran %v, %+v", ran.Load(), sum)
	}
	r, err := f.st.Get(ctx, "ORDERS.c", acks.KeyFromSequence, "1")
	if err != nil || r.State != acks.StateFailed || !strings.Contains(r.Reason, "the ack record was corrupt") {
		t.Fatalf("record: %+v %v", r, err)
	}
}

// A forward move in place that skips messages opens a new floor range: the
// skipped messages are never covered, so a later rewind runs them.
func TestForwardMoveIsNotCovered(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t, 60*time.Second)
	publish(t, f.js, "orders", 1, 20)
	cons := addConsumer(t, f.js, "ORDERS", "c", 30*time.Second)
	tl := newTally()
	if _, err := f.st.Consume(ctx, cons, tl.handler(nil), acks.WithMaxMessages(5)); err != nil {
		t.Fatal(err)
	}
	// Skip 6..15 in place, as jsctl consumer reset does.
	if _, err := f.js.ResetConsumerToSequence(ctx, "ORDERS", "c", 16); err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ref := acks.FloorRef{Scope: "ORDERS.c", Stream: "ORDERS", Consumer: "c"}
	if err := f.st.NoteForwardMove(ctx, ref, info, 16); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Consume(ctx, cons, tl.handler(nil), acks.WithMaxMessages(5)); err != nil {
		t.Fatal(err)
	}
	fl, err := f.st.ReadFloor(ctx, ref)
	if err != nil || fl.Seq != 20 || fl.Covers(10, "orders.10") || !fl.Covers(18, "orders.18") {
		t.Fatalf("floor after a forward move: %+v %v", fl, err)
	}
	// Rewind to the start: the skipped messages run, nothing else does.
	if _, err := f.js.ResetConsumerToSequence(ctx, "ORDERS", "c", 1); err != nil {
		t.Fatal(err)
	}
	before := tl.snapshot()
	if _, err := f.st.Consume(ctx, cons, tl.handler(nil), acks.WithMaxMessages(20)); err != nil {
		t.Fatal(err)
	}
	after := tl.snapshot()
	for seq := uint64(1); seq <= 20; seq++ {
		want := 0
		if seq >= 6 && seq <= 15 {
			want = 1
		}
		if got := after[seq] - before[seq]; got != want {
			t.Errorf("after the rewind message %d ran %d times, want %d", seq, got, want)
		}
	}
}

// On a replicated bucket a lease must outlast an election.
func TestShortLeaseRefusedOnReplicatedBucket(t *testing.T) {
	js := testserver.StartCluster(t, 3).JetStream()
	ctx := testCtx(t, 60*time.Second)
	addStream(t, js, "ORDERS", 3)
	st, err := acks.Open(ctx, js, acks.WithReplicas(3))
	if err != nil {
		t.Fatal(err)
	}
	cons := addConsumer(t, js, "ORDERS", "c", 30*time.Second)
	_, err = st.Consume(ctx, cons, func(context.Context, acks.Delivery) error { return nil }, acks.WithLease(5*time.Second))
	if err == nil || !strings.Contains(err.Error(), "lease 5s is below 15s, the minimum on the replicated bucket") {
		t.Fatalf("a 5s lease on an R3 bucket: %v", err)
	}
}

// A message whose last allowed delivery ends without an outcome (here every
// delivery finds another worker's live claim) is given up on by the server,
// which moves the consumer's ack floor past it. Without a dead-letter
// subject it must still end with a final failed record: otherwise the
// consumer's floor would pass it as handled, and a rewind would skip it.
func TestGivenUpMessageIsNeverCoveredByTheFloor(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t, 60*time.Second)
	publish(t, f.js, "orders", 1, 3)
	cons := addConsumer(t, f.js, "ORDERS", "c", 30*time.Second, func(c *jetstream.ConsumerConfig) { c.MaxDeliver = 2 })
	// Another worker's claim on message 2, with a lease of its own that
	// outlives both deliveries (however slowly the run starts) and runs
	// out well within the run's idle time.
	claim, _ := json.Marshal(map[string]any{"s": "claim", "q": 2, "w": "other:1", "x": time.Now().Add(5 * time.Second).UnixNano()})
	if _, err := f.st.KV().Create(ctx, "r.ORDERS.c.s2", claim, jetstream.KeyTTL(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	tl := newTally()
	sum, err := f.st.Consume(ctx, cons, tl.handler(nil), acks.WithLease(2*time.Second), acks.WithBusyDelay(100*time.Millisecond), acks.WithIdle(12*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if tl.snapshot()[2] != 0 {
		t.Fatalf("message 2 ran while another worker held it: %v", tl.snapshot())
	}
	r, err := f.st.Get(ctx, "ORDERS.c", acks.KeyFromSequence, "2")
	if err != nil || r.State != acks.StateFailed || !r.Final || !strings.Contains(r.Reason, "last allowed delivery ended without an outcome") {
		t.Fatalf("message 2's record after the server gave up on it: %+v %v (summary %+v)", r, err, sum)
	}
	// A rewind runs it: its final failed record wins over the floor.
	if _, err := f.js.ResetConsumerToSequence(ctx, "ORDERS", "c", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Consume(ctx, cons, tl.handler(nil), acks.WithMaxMessages(3)); err != nil {
		t.Fatal(err)
	}
	if runs := tl.snapshot(); runs[1] != 1 || runs[2] != 1 || runs[3] != 1 {
		t.Fatalf("after the rewind: %v, want each message once", runs)
	}
}
