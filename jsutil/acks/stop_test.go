package acks_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jsctl/jsctl/jsutil/acks"
)

// A handler ended by the caller's stop is released: the failed record it
// took over is written back with its count, so the stop counts toward no
// failure bound, and the next delivery (at once) runs it again.
func TestStopReleasesAndKeepsFailureCount(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t, 30*time.Second)
	publish(t, f.js, "orders", 1, 1)
	cons := addConsumer(t, f.js, "ORDERS", "c", 30*time.Second)
	opts := []acks.ProcessOption{acks.WithMaxFailures(2), acks.WithRetryDelay(100 * time.Millisecond)}
	fail := func(context.Context, acks.Delivery) error { return errors.New("boom") }

	r, _ := f.st.Process(ctx, next(t, cons), fail, opts...)
	if r.Action != acks.Failed || r.Final || r.Failures != 1 {
		t.Fatalf("first delivery: %+v", r)
	}
	stopCtx, stop := context.WithCancel(ctx)
	r, err := f.st.Process(stopCtx, next(t, cons), func(hctx context.Context, d acks.Delivery) error {
		stop() // the caller stops while the handler runs
		<-hctx.Done()
		return hctx.Err()
	}, opts...)
	if r.Action != acks.Released || !errors.Is(err, acks.ErrStopped) || r.Final {
		t.Fatalf("stopped delivery: %+v %v", r, err)
	}
	rec, err := f.st.Get(ctx, "ORDERS.c", acks.KeyFromSequence, "1")
	if err != nil || rec.State != acks.StateFailed || rec.Failures != 1 || rec.Final || rec.Reason != "boom" {
		t.Fatalf("record after the stop: %+v %v, want failed 1x (boom), not final", rec, err)
	}
	// Nak'd without a delay; the second failure is the one that ends it.
	r, _ = f.st.Process(ctx, next(t, cons), fail, opts...)
	if r.Action != acks.Failed || !r.Final || r.Failures != 2 || r.Deliveries != 3 {
		t.Fatalf("third delivery: %+v, want the second failure, final", r)
	}
}

// Consume's own stop: handlers still running after the drain timeout are
// cancelled with ErrStopped; one that fails then is released (its claim
// purged, no record left), one that still succeeds is processed.
func TestConsumeStopReleasesRunningHandlers(t *testing.T) {
	f := newFixture(t)
	publish(t, f.js, "orders", 1, 2)
	cons := addConsumer(t, f.js, "ORDERS", "c", 30*time.Second)
	ctx, cancel := context.WithCancel(testCtx(t, 30*time.Second))
	started := make(chan uint64, 2)
	h := func(hctx context.Context, d acks.Delivery) error {
		started <- d.Seq
		<-hctx.Done()
		if !errors.Is(context.Cause(hctx), acks.ErrStopped) {
			return fmt.Errorf("cancelled by %v, not the stop", context.Cause(hctx))
		}
		if d.Seq == 2 {
			return nil // finishes its work on the stop
		}
		return hctx.Err()
	}
	type out struct {
		sum acks.Summary
		err error
	}
	ch := make(chan out, 1)
	var mu sync.Mutex
	var results []acks.Result
	go func() {
		sum, err := f.st.Consume(ctx, cons, h, acks.WithWorkers(2), acks.WithDrainTimeout(100*time.Millisecond),
			acks.WithMaxFailures(1), acks.OnResult(func(r acks.Result) {
				mu.Lock()
				defer mu.Unlock()
				results = append(results, r)
			}))
		ch <- out{sum, err}
	}()
	for range 2 {
		select {
		case <-started:
		case <-time.After(30 * time.Second):
			t.Fatal("handlers did not start")
		}
	}
	cancel()
	o := <-ch
	if o.err != nil || o.sum.Released != 1 || o.sum.Processed != 1 || o.sum.FailedDeliveries != 0 || o.sum.Failed != 0 {
		t.Fatalf("%+v %v, want released 1, processed 1", o.sum, o.err)
	}
	for _, r := range results {
		if want := map[uint64]acks.Action{1: acks.Released, 2: acks.Processed}[r.Seq]; r.Action != want {
			t.Errorf("message %d: %s, want %s", r.Seq, r.Action, want)
		}
	}
	recs, err := f.st.List(testCtx(t, 10*time.Second), acks.Filter{Scope: "ORDERS.c"})
	if err != nil || len(recs) != 1 || recs[0].Seq != 2 || recs[0].State != acks.StateDone {
		t.Fatalf("records %+v %v, want only message 2's, done", recs, err)
	}
}
