package acks_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go/jetstream"
)

// A worker dies (its connection is gone, as with kill -9) while its handler
// runs a message's last allowed delivery. The server gives up on the
// message; the next ack of a later message finds nothing pending and moves
// the consumer's ack floor past it (nats-server moveAckFloor), and the run
// still alive advances the consumer's floor over it. Once the dead
// worker's claim has run out, the sweep keeps a final failed record for
// the message: a floor that covers it proves nothing about its outcome.
func TestWorkerDiedOnLastDeliveryGetsAFailedRecord(t *testing.T) {
	srv := testserver.Start(t)
	jsA, jsB := newJS(t, srv), newJS(t, srv)
	addStream(t, jsB, "ORDERS", 1)
	ctx := testCtx(t, 90*time.Second)
	stB, err := acks.Open(ctx, jsB)
	if err != nil {
		t.Fatal(err)
	}
	stA, err := acks.Open(ctx, jsA)
	if err != nil {
		t.Fatal(err)
	}
	// Lease longer than the ack wait: the dead worker's claim is still
	// there when the server gives up on the message.
	const lease = 3 * time.Second
	cfg := func(c *jetstream.ConsumerConfig) { c.MaxDeliver = 1 }
	addConsumer(t, jsB, "ORDERS", "c", time.Second, cfg)
	publish(t, jsB, "orders", 1, 1)

	// Worker A takes message 1 (its only allowed delivery) and dies in
	// its handler.
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
		}, acks.WithLease(lease), acks.WithMaxMessages(1), acks.WithDrainTimeout(time.Second))
	}()
	t.Cleanup(func() { acancel(); <-aDone })
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("worker A never ran message 1")
	}
	const watch = "d.ORDERS.c.s1"
	testserver.WaitFor(t, 10*time.Second, "the watch of message 1", func() bool {
		_, err := stB.KV().Get(ctx, watch)
		return err == nil
	})
	jsA.Conn().Close() // kill -9: nothing more from worker A

	// Worker B runs on and handles later messages.
	consB, err := jsB.Consumer(ctx, "ORDERS", "c")
	if err != nil {
		t.Fatal(err)
	}
	tl := newTally()
	bctx, bcancel := context.WithCancel(ctx)
	type out struct {
		sum acks.Summary
		err error
	}
	bOut := make(chan out, 1)
	go func() {
		sum, err := stB.Consume(bctx, consB, tl.handler(nil), acks.WithLease(lease))
		bOut <- out{sum, err}
	}()
	defer func() { bcancel(); <-bOut }()
	publish(t, jsB, "orders", 2, 2)
	testserver.WaitFor(t, 20*time.Second, "the server to give up on message 1", func() bool {
		info, err := consB.Info(ctx)
		return err == nil && info.NumAckPending == 0 && info.Delivered.Stream >= 3 && len(tl.snapshot()) >= 2
	})
	// Traffic goes on: acks of later messages move the consumer's ack
	// floor past message 1, and B's floor with it.
	publish(t, jsB, "orders", 4, 2)
	testserver.WaitFor(t, 20*time.Second, "the ack floor to pass message 1", func() bool {
		info, err := consB.Info(ctx)
		return err == nil && info.AckFloor.Stream >= 5
	})
	testserver.WaitFor(t, 20*time.Second, "B's floor to cover message 1", func() bool {
		f, err := stB.ReadFloor(ctx, acks.FloorRef{Scope: "ORDERS.c", Stream: "ORDERS", Consumer: "c"})
		return err == nil && f.Covers(1, "orders.1")
	})

	// Wait for the sweep to act on the watch (once the claim ran out).
	testserver.WaitFor(t, 30*time.Second, "the sweep to settle the watch of message 1", func() bool {
		_, err := stB.KV().Get(ctx, watch)
		return errors.Is(err, jetstream.ErrKeyNotFound)
	})
	if runs := tl.snapshot()[1]; runs != 0 {
		t.Fatalf("message 1 ran %d times in worker B", runs)
	}
	r, err := stB.Get(ctx, "ORDERS.c", acks.KeyFromSequence, "1")
	if err != nil {
		t.Fatalf("message 1 never ran (its worker died on its last allowed delivery) and has no record: %v; want a final failed record", err)
	}
	if r.State != acks.StateFailed || !r.Final {
		t.Fatalf("message 1 never ran, yet its record is %s (final %v), want a final failed record", r.State, r.Final)
	}
}

// A watch left behind (its run stopped between the ack and the watch's
// removal) by a jsctl that wrote watches without a TTL outlives the done
// record of its message. Once it is older than the records' retention the
// sweep cannot tell a done message from a dead worker's: it drops the
// watch with a note and records nothing, as it would for a watch written
// with the retention's TTL (which expires by itself). This holds for a
// filtered consumer whose message is gone from the stream too.
func TestLeftoverWatchOutlivingTheRecords(t *testing.T) {
	for _, gone := range []bool{false, true} {
		t.Run(map[bool]string{false: "message kept", true: "message gone"}[gone], func(t *testing.T) {
			f := newFixture(t)
			ctx := testCtx(t, 60*time.Second)
			st, err := acks.Open(ctx, f.js, acks.WithBucket("SHORT"), acks.WithRetention(2*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			publish(t, f.js, "orders", 1, 1)
			cons := addConsumer(t, f.js, "ORDERS", "c", 5*time.Second, func(c *jetstream.ConsumerConfig) {
				c.MaxDeliver = 1
				c.FilterSubject = "orders.>"
			})
			const watch = "d.ORDERS.c.s1"
			sum, err := st.Consume(ctx, cons, func(context.Context, acks.Delivery) error { return nil },
				acks.WithLease(10*time.Second), acks.WithMaxMessages(1),
				acks.OnResult(func(r acks.Result) {
					if r.Action == acks.Processed {
						w := `{"st":"ORDERS","c":"c","q":1,"ls":"","d":1,"k":"1","kf":"sequence","ks":"seq"}`
						if _, err := st.KV().Put(context.Background(), watch, []byte(w)); err != nil {
							t.Error(err)
						}
					}
				}))
			if err != nil || sum.Processed != 1 {
				t.Fatalf("run: %+v %v", sum, err)
			}
			if gone {
				stream, err := f.js.Stream(ctx, "ORDERS")
				if err != nil {
					t.Fatal(err)
				}
				if err := stream.DeleteMsg(ctx, 1); err != nil {
					t.Fatal(err)
				}
			}
			testserver.WaitFor(t, 30*time.Second, "the done record to expire", func() bool {
				_, err := st.Get(ctx, "ORDERS.c", acks.KeyFromSequence, "1")
				return errors.Is(err, jsutil.ErrNotFound)
			})
			// The watch was written after the done record: it is older
			// than the retention only a moment later (longer on a loaded
			// machine).
			testserver.WaitFor(t, 30*time.Second, "the watch to be older than the retention", func() bool {
				e, err := st.KV().Get(ctx, watch)
				if err != nil {
					t.Fatalf("watch: %v", err)
				}
				return time.Since(e.Created()) > 2*time.Second
			})
			sw, err := st.SweepDeadLetters(ctx, "ORDERS.c", 10*time.Second, "")
			if err != nil {
				t.Fatal(err)
			}
			recs, err := st.List(ctx, acks.Filter{Scope: "ORDERS.c"})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if r.State == acks.StateFailed {
					t.Errorf("message %d ran and was acked, yet the sweep wrote a failed record for it: %q", r.Seq, r.Reason)
				}
			}
			if sw.Published != 0 || len(sw.Notes) != 1 || !strings.Contains(sw.Notes[0], "outlived the records' retention (2s)") {
				t.Errorf("sweep %+v: want one note on the watch that outlived the records", sw)
			}
			if _, err := st.KV().Get(ctx, watch); !errors.Is(err, jetstream.ErrKeyNotFound) {
				t.Errorf("watch left: %v", err)
			}
		})
	}
}
