package acks_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go/jetstream"
)

// What OnFetch and OnSweep report adds up with the results to the
// summary: the dead letter a sweep published (a worker died on the
// message's last allowed delivery) is reported by OnSweep, not by a
// result, and Summary.DeadLettered counts both. OnFetch reports answered
// pulls while the run waits for messages, and the fetcher's end.
func TestObserversAddUpToTheSummary(t *testing.T) {
	srv := testserver.Start(t)
	jsA, jsB := newJS(t, srv), newJS(t, srv)
	addStream(t, jsB, "ORDERS", 1)
	addDeadStream(t, jsB)
	ctx := testCtx(t, 90*time.Second)
	stA, err := acks.Open(ctx, jsA)
	if err != nil {
		t.Fatal(err)
	}
	stB, err := acks.Open(ctx, jsB)
	if err != nil {
		t.Fatal(err)
	}
	const lease = 3 * time.Second
	addConsumer(t, jsB, "ORDERS", "c", time.Second, func(c *jetstream.ConsumerConfig) { c.MaxDeliver = 1 })
	publish(t, jsB, "orders", 1, 1)

	// Worker A dies in its handler on message 1's only delivery.
	consA, err := jsA.Consumer(ctx, "ORDERS", "c")
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	actx, acancel := context.WithCancel(ctx)
	aDone := make(chan struct{})
	go func() {
		defer close(aDone)
		_, _ = stA.Consume(actx, consA, func(hctx context.Context, d acks.Delivery) error {
			close(started)
			<-hctx.Done()
			return hctx.Err()
		}, acks.WithLease(lease), acks.WithMaxMessages(1), acks.WithDrainTimeout(time.Second), acks.WithDeadLetter("dead.orders"))
	}()
	t.Cleanup(func() { acancel(); <-aDone })
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("worker A never ran message 1")
	}
	testserver.WaitFor(t, 10*time.Second, "the watch of message 1", func() bool {
		_, err := stB.KV().Get(ctx, "d.ORDERS.c.s1")
		return err == nil
	})
	jsA.Conn().Close()

	// Worker B, watched.
	consB, err := jsB.Consumer(ctx, "ORDERS", "c")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var answered, stopped, swept, resultDead int
	bctx, bcancel := context.WithCancel(ctx)
	defer bcancel()
	type out struct {
		sum acks.Summary
		err error
	}
	bOut := make(chan out, 1)
	go func() {
		sum, err := stB.Consume(bctx, consB, func(context.Context, acks.Delivery) error { return nil },
			acks.WithLease(lease), acks.WithDeadLetter("dead.orders"),
			acks.OnFetch(func(f acks.Fetch) {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case f.Stopped:
					stopped++
				case f.Answered:
					answered++
				}
			}),
			acks.OnSweep(func(n int) { mu.Lock(); swept += n; mu.Unlock() }),
			acks.OnResult(func(r acks.Result) {
				if r.DeadLettered {
					mu.Lock()
					resultDead++
					mu.Unlock()
				}
			}))
		bOut <- out{sum, err}
	}()
	publish(t, jsB, "orders", 2, 4)
	testserver.WaitFor(t, 60*time.Second, "the sweep to dead-letter message 1", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return swept == 1
	})
	bcancel()
	o := <-bOut
	if o.err != nil {
		t.Fatal(o.err)
	}
	mu.Lock()
	defer mu.Unlock()
	if o.sum.DeadLettered != swept+resultDead || swept != 1 {
		t.Errorf("summary dead-lettered %d; OnSweep %d + results %d (want 1 + 0)", o.sum.DeadLettered, swept, resultDead)
	}
	if answered == 0 || stopped != 1 {
		t.Errorf("OnFetch: %d answered pulls, %d ends; want some and 1", answered, stopped)
	}
	if n := streamInfo(t, jsB, "DEAD").State.Msgs; n != 1 {
		t.Errorf("the dead-letter stream holds %d messages, want 1", n)
	}
}
