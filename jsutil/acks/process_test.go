package acks_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go/jetstream"
)

type fixture struct {
	js jetstream.JetStream
	st *acks.Store
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	js := newJS(t, testserver.Start(t))
	addStream(t, js, "ORDERS", 1)
	st, err := acks.Open(testCtx(t, 10*time.Second), js)
	if err != nil {
		t.Fatal(err)
	}
	return fixture{js, st}
}

func next(t *testing.T, cons jetstream.Consumer) jetstream.Msg {
	t.Helper()
	m, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestDuplicatesSkipHandler(t *testing.T) {
	f := newFixture(t)
	publish(t, f.js, "orders", 1, 20)
	tl := newTally()
	sum := consumeAll(t, f.st, addConsumer(t, f.js, "ORDERS", "a", 30*time.Second), tl, 20, tl.handler(nil), acks.WithWorkers(4))
	if sum.Processed != 20 || sum.Floor != 20 {
		t.Fatalf("first run: %+v", sum)
	}
	// A second consumer sharing the scope replays everything: all duplicates.
	var dups atomic.Int32
	sum, err := f.st.Consume(testCtx(t, 30*time.Second), addConsumer(t, f.js, "ORDERS", "b", 30*time.Second), tl.handler(nil),
		acks.WithScope(acks.DefaultScope("ORDERS", "a")), acks.WithMaxMessages(20),
		acks.OnResult(func(r acks.Result) {
			if r.Action == acks.Duplicate && !r.Mismatch && r.RecordSeq == r.Seq {
				dups.Add(1)
			}
		}))
	if err != nil || sum.Duplicates != 20 || sum.Processed != 0 || dups.Load() != 20 {
		t.Fatalf("replay: %+v (%d clean duplicates)", sum, dups.Load())
	}
	tl.exactlyOnce(t, 20)
}

func TestPayloadMismatchIsReported(t *testing.T) {
	f := newFixture(t)
	publish(t, f.js, "orders", 1, 2, "Order-Id", "same")
	cons := addConsumer(t, f.js, "ORDERS", "c", 30*time.Second)
	ctx := testCtx(t, 20*time.Second)
	tl := newTally()
	r1, err := f.st.Process(ctx, next(t, cons), tl.handler(nil), acks.WithKeyHeader("Order-Id"))
	if err != nil || r1.Action != acks.Processed || r1.Key != "same" || r1.KeyFrom != acks.KeyFromHeader {
		t.Fatalf("first: %+v %v", r1, err)
	}
	r2, err := f.st.Process(ctx, next(t, cons), tl.handler(nil), acks.WithKeyHeader("Order-Id"))
	if err != nil || r2.Action != acks.Duplicate || !r2.Mismatch || r2.RecordSeq != 1 || r2.Seq != 2 {
		t.Fatalf("second: %+v %v", r2, err)
	}
	if len(tl.snapshot()) != 1 {
		t.Error("handler ran for the duplicate key")
	}
}

func TestNonIdempotentSubjectsHaveNoRecords(t *testing.T) {
	f := newFixture(t)
	publish(t, f.js, "orders", 1, 3)
	publish(t, f.js, "audit", 4, 2)
	tl := newTally()
	var plain atomic.Int32
	sum := consumeAll(t, f.st, addConsumer(t, f.js, "ORDERS", "c", 30*time.Second), tl, 5, tl.handler(nil),
		acks.WithIdempotentSubjects("orders.>"), acks.OnResult(func(r acks.Result) {
			if !r.Idempotent && r.Fence == 0 {
				plain.Add(1)
			}
		}))
	if sum.Processed != 5 || plain.Load() != 2 {
		t.Fatalf("%+v, %d without record", sum, plain.Load())
	}
	recs, err := f.st.List(testCtx(t, 10*time.Second), acks.Filter{Scope: "ORDERS.c"})
	if err != nil || len(recs) != 3 {
		t.Fatalf("records: %d %v", len(recs), err)
	}
	if _, err := f.st.Process(testCtx(t, time.Second), nil, nil, acks.WithIdempotentSubjects("a.>.b")); !errors.Is(err, jsutil.ErrBadInput) {
		t.Errorf("bad pattern: %v", err)
	}
}

// A live worker's claim is renewed past its lease; others back off. A dead
// worker's claim expires on the server and the message is then handled.
func TestLeaseRenewalAndExpiry(t *testing.T) {
	f := newFixture(t)
	publish(t, f.js, "orders", 1, 2)
	ctx := testCtx(t, 30*time.Second)
	only := func(subj string) func(*jetstream.ConsumerConfig) {
		return func(c *jetstream.ConsumerConfig) { c.FilterSubject = subj }
	}
	a := addConsumer(t, f.js, "ORDERS", "a", 30*time.Second, only("orders.1"))
	b := addConsumer(t, f.js, "ORDERS", "b", 30*time.Second, only("orders.1"))
	c := addConsumer(t, f.js, "ORDERS", "c", 30*time.Second, only("orders.2"))
	scope := acks.WithScope("ORDERS.shared")
	// A 3s lease is renewed every 0.5s and counts as lost once its last
	// stored write is 2.75s old: on a loaded machine a renewal may be over
	// 2s late (with a 1s lease, 0.25s was too little).
	lease := acks.WithLease(3 * time.Second)

	// Live worker: its handler runs more than two leases long.
	release := make(chan struct{})
	started := make(chan uint64, 1)
	done := make(chan acks.Result, 1)
	go func() {
		r, _ := f.st.Process(ctx, next(t, a), func(ctx context.Context, d acks.Delivery) error {
			started <- d.Fence
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}, scope, lease)
		done <- r
	}()
	fence := <-started
	mb := next(t, b)
	deadline := time.Now().Add(7 * time.Second)
	for time.Now().Before(deadline) { // spans several leases: renewals keep the claim
		r, err := f.st.Process(ctx, mb, func(context.Context, acks.Delivery) error { t.Error("ran a claimed message"); return nil }, scope, lease, acks.WithBusyDelay(50*time.Millisecond))
		if err != nil || r.Action != acks.Busy {
			t.Fatalf("while claimed: %+v %v", r, err)
		}
		mb = next(t, b)
	}
	close(release)
	if r := <-done; r.Action != acks.Processed || r.Fence != fence {
		t.Fatalf("live worker: %+v", r)
	}
	r, err := f.st.Process(ctx, mb, func(context.Context, acks.Delivery) error { t.Error("ran a done message"); return nil }, scope, lease)
	if err != nil || r.Action != acks.Duplicate {
		rec, gerr := f.st.Get(ctx, "ORDERS.shared", acks.KeyFromSequence, "1")
		t.Fatalf("after done: %+v %v; record %+v %v", r, err, rec, gerr)
	}

	// Dead worker: a claim on message 2 that nobody renews.
	if _, err := f.st.KV().Create(ctx, "r.ORDERS.shared.s2", []byte(`{"s":"claim","q":2,"w":"dead"}`), jetstream.KeyTTL(time.Second)); err != nil {
		t.Fatal(err)
	}
	m2 := next(t, c)
	var ran atomic.Int32
	testserver.WaitFor(t, 10*time.Second, "the dead claim to expire", func() bool {
		r, _ := f.st.Process(ctx, m2, func(context.Context, acks.Delivery) error { ran.Add(1); return nil }, scope, lease, acks.WithBusyDelay(10*time.Millisecond))
		if r.Action == acks.Processed {
			return true
		}
		if r.Action != acks.Busy {
			t.Fatalf("dead claim: %+v", r)
		}
		m2 = next(t, c)
		return false
	})
	if ran.Load() != 1 {
		t.Errorf("handler ran %d times", ran.Load())
	}
}

// A claim changed under a running handler (here: forgotten) is a lost
// lease: the handler's context is cancelled, nothing is acked or done.
func TestLeaseLostCancelsHandler(t *testing.T) {
	f := newFixture(t)
	publish(t, f.js, "orders", 1, 1)
	ctx := testCtx(t, 30*time.Second)
	cons := addConsumer(t, f.js, "ORDERS", "c", 30*time.Second)
	started := make(chan struct{})
	resc := make(chan acks.Result, 1)
	go func() {
		r, _ := f.st.Process(ctx, next(t, cons), func(ctx context.Context, d acks.Delivery) error {
			close(started)
			<-ctx.Done()
			return ctx.Err()
		}, acks.WithLease(time.Second))
		resc <- r
	}()
	<-started
	if n, err := f.st.ForgetRange(ctx, "ORDERS.c", 1, 1); n != 1 || err != nil {
		t.Fatalf("forget: %d %v", n, err)
	}
	r := <-resc
	if r.Action != acks.Failed || !r.LeaseLost || !errors.Is(r.Err, acks.ErrLeaseLost) || !errors.Is(r.Err, jsutil.ErrConflict) {
		t.Fatalf("result %+v (%v)", r, r.Err)
	}
	if n, _ := f.st.CountRange(ctx, "ORDERS.c", 1, 1); n != 0 {
		t.Errorf("a record was written after the lease was lost")
	}
}

// Rewind: without forgetting, a replay runs nothing; ForgetRange makes
// exactly that range run once more; a compacted scope still skips by floor.
func TestRewindForgetRangeAndCompact(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t, 60*time.Second)
	publish(t, f.js, "orders", 1, 30, "Nats-Msg-Id", "id-%d")
	tl := newTally()
	sum := consumeAll(t, f.st, addConsumer(t, f.js, "ORDERS", "c", 30*time.Second), tl, 30, tl.handler(nil), acks.WithWorkers(3))
	if sum.Processed != 30 || sum.Floor != 30 {
		t.Fatalf("first run: %+v", sum)
	}
	replay := func(want int) acks.Summary {
		t.Helper()
		if err := f.js.DeleteConsumer(ctx, "ORDERS", "c"); err != nil {
			t.Fatal(err)
		}
		cons := addConsumer(t, f.js, "ORDERS", "c", 30*time.Second)
		before := tl.snapshot()
		var seen atomic.Int32
		ctx2, cancel := context.WithCancel(ctx)
		defer cancel()
		sum, err := f.st.Consume(ctx2, cons, tl.handler(nil), acks.WithWorkers(3), acks.WithMaxMessages(30), acks.OnResult(func(acks.Result) { seen.Add(1) }))
		if err != nil {
			t.Fatal(err)
		}
		after := tl.snapshot()
		ran := 0
		for seq, n := range after {
			ran += n - before[seq]
		}
		if ran != want || sum.Handled() != 30 {
			t.Fatalf("replay ran %d handlers, want %d (%+v)", ran, want, sum)
		}
		return sum
	}
	replay(0)
	if n, err := f.st.CountRange(ctx, "ORDERS.c", 10, 14); n != 5 || err != nil {
		t.Fatalf("CountRange: %d %v", n, err)
	}
	if n, err := f.st.ForgetRange(ctx, "ORDERS.c", 10, 14); n != 5 || err != nil {
		t.Fatalf("ForgetRange: %d %v", n, err)
	}
	ref := acks.FloorRef{Scope: "ORDERS.c", Stream: "ORDERS", Consumer: "c"}
	if fl, err := f.st.ReadFloor(ctx, ref); fl.Seq != 9 || err != nil {
		t.Fatalf("floor after forget = %+v %v, want 9", fl, err)
	}
	replay(5)
	runs := tl.snapshot()
	for seq := uint64(1); seq <= 30; seq++ {
		want := 1
		if seq >= 10 && seq <= 14 {
			want = 2
		}
		if runs[seq] != want {
			t.Errorf("message %d ran %d times, want %d", seq, runs[seq], want)
		}
	}
	// Compaction: the done records at or below the floor go; a replay still
	// skips every message, by the floor.
	if fl, err := f.st.ReadFloor(ctx, ref); fl.Seq != 30 || err != nil {
		t.Fatalf("floor = %+v %v, want 30", fl, err)
	}
	if n, err := f.st.Compact(ctx, "ORDERS.c"); n != 30 || err != nil {
		t.Fatalf("Compact: %d %v", n, err)
	}
	if n, _ := f.st.CountRange(ctx, "ORDERS.c", 1, 30); n != 0 {
		t.Fatalf("%d records left after compaction", n)
	}
	if sum := replay(0); sum.Duplicates != 30 {
		t.Fatalf("replay after compaction: %+v", sum)
	}
}

// A handler failing on the consumer's last delivery leaves a failed record:
// the floor passes it but a rewind runs it again.
func TestLastDeliveryFailureLeavesFailedRecord(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t, 30*time.Second)
	publish(t, f.js, "orders", 1, 3)
	cons := addConsumer(t, f.js, "ORDERS", "c", 30*time.Second, func(c *jetstream.ConsumerConfig) { c.MaxDeliver = 2 })
	var failed atomic.Int32
	h := func(ctx context.Context, d acks.Delivery) error {
		if d.Seq == 2 {
			failed.Add(1)
			return fmt.Errorf("boom")
		}
		return nil
	}
	sum, err := f.st.Consume(ctx, cons, h, acks.WithIdle(time.Second), acks.WithRetryDelay(100*time.Millisecond))
	if err != nil || sum.Processed != 2 || sum.Failed != 1 || sum.FailedDeliveries != 2 || sum.Terminated != 1 || failed.Load() != 2 {
		t.Fatalf("%+v %v (%d failures)", sum, err, failed.Load())
	}
	r, err := f.st.Get(ctx, "ORDERS.c", acks.KeyFromSequence, "2")
	if err != nil || r.State != acks.StateFailed {
		t.Fatalf("record 2: %+v %v", r, err)
	}
	// The terminated message is acknowledged as far as the server goes:
	// the consumer's floor passes it too, but its failed record wins.
	if fl, err := f.st.ReadFloor(ctx, acks.FloorRef{Scope: "ORDERS.c", Stream: "ORDERS", Consumer: "c"}); fl.Seq != 3 || err != nil {
		t.Fatal(fl, err)
	}
	if err := f.js.DeleteConsumer(ctx, "ORDERS", "c"); err != nil {
		t.Fatal(err)
	}
	cons = addConsumer(t, f.js, "ORDERS", "c", 30*time.Second)
	tl := newTally()
	sum, err = f.st.Consume(ctx, cons, tl.handler(nil), acks.WithMaxMessages(3))
	if err != nil || sum.Processed != 1 || sum.Duplicates != 2 || tl.snapshot()[2] != 1 {
		t.Fatalf("replay: %+v %v %v", sum, err, tl.snapshot())
	}
}

// N workers and two separate stores (as two processes) on one consumer
// with an ack wait shorter than many handlers: every message once.
func TestConcurrentWorkersExactlyOnce(t *testing.T) {
	s := testserver.Start(t)
	js1, js2 := newJS(t, s), newJS(t, s)
	addStream(t, js1, "ORDERS", 1)
	const n = 300
	publish(t, js1, "orders", 1, n)
	ctx := testCtx(t, 60*time.Second)
	st1, err := acks.Open(ctx, js1, acks.WithWorker("one"))
	if err != nil {
		t.Fatal(err)
	}
	st2, err := acks.Open(ctx, js2, acks.WithWorker("two"))
	if err != nil {
		t.Fatal(err)
	}
	cons1 := addConsumer(t, js1, "ORDERS", "c", 150*time.Millisecond)
	cons2, err := js2.Consumer(ctx, "ORDERS", "c")
	if err != nil {
		t.Fatal(err)
	}
	tl := newTally()
	var redelivered, busy atomic.Int32
	h := tl.handler(func(d acks.Delivery) error {
		if d.Deliveries > 1 {
			redelivered.Add(1)
		}
		time.Sleep(time.Duration(rand.IntN(300)) * time.Millisecond) // work, longer than the ack wait for many
		if rand.IntN(10) == 0 {
			return fmt.Errorf("transient failure")
		}
		return nil
	})
	onRes := acks.OnResult(func(r acks.Result) {
		if r.Action == acks.Busy {
			busy.Add(1)
		}
	})
	opts := []acks.ConsumeOption{acks.WithWorkers(16), acks.WithLease(2 * time.Second), acks.WithBusyDelay(100 * time.Millisecond), onRes}
	ctx2, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 2)
	for _, p := range []struct {
		st   *acks.Store
		cons jetstream.Consumer
	}{{st1, cons1}, {st2, cons2}} {
		go func() {
			_, err := p.st.Consume(ctx2, p.cons, h, opts...)
			errc <- err
		}()
	}
	testserver.WaitFor(t, 50*time.Second, "all messages done", func() bool {
		n2, _ := st1.List(ctx, acks.Filter{Scope: "ORDERS.c", State: acks.StateDone})
		return len(n2) == n
	})
	cancel()
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	tl.exactlyOnce(t, n)
	if claims, _ := st1.List(ctx, acks.Filter{State: acks.StateClaim}); len(claims) != 0 {
		t.Errorf("%d claims left behind", len(claims))
	}
	t.Logf("redeliveries seen by handlers: %d, busy back-offs: %d", redelivered.Load(), busy.Load())
	if busy.Load() == 0 {
		t.Error("no busy back-off: the test did not force concurrent redeliveries")
	}
}

// Options that size Consume's buffers are bounded: a huge count is bad
// input, never a panic in makechan (or a multiplication that overflows).
func TestConsumeBoundsSizes(t *testing.T) {
	f := newFixture(t)
	cons := addConsumer(t, f.js, "ORDERS", "a", 30*time.Second)
	handler := func(context.Context, acks.Delivery) error { return nil }
	for _, opt := range []acks.ConsumeOption{
		acks.WithWorkers(math.MaxInt), acks.WithWorkers(acks.MaxWorkers + 1),
		acks.WithPrefetch(math.MaxInt), acks.WithBatch(acks.MaxBatch+1, 0),
	} {
		if _, err := f.st.Consume(testCtx(t, 5*time.Second), cons, handler, opt); !errors.Is(err, jsutil.ErrBadInput) {
			t.Errorf("got %v, want a bad-input error", err)
		}
	}
}
