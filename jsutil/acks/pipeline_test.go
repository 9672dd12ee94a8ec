package acks_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Claims are made as messages are fetched, ahead of the worker. With a
// slow handler (longer than half the lease) and one delivery allowed, a
// message fetched ahead must still run: its claim may not run out in the
// queue, and one that did is claimed afresh rather than failed.
func TestPrefetchedClaimsOutlastASlowHandler(t *testing.T) {
	f := newFixture(t)
	const n = 5
	publish(t, f.js, "orders", 1, n)
	cons := addConsumer(t, f.js, "ORDERS", "slow", 4*time.Second, func(c *jetstream.ConsumerConfig) { c.MaxDeliver = 1 })
	var mu sync.Mutex
	var bad []acks.Result
	tl := newTally()
	h := tl.handler(func(acks.Delivery) error { time.Sleep(1200 * time.Millisecond); return nil })
	ctx := testCtx(t, 60*time.Second)
	sum, err := f.st.Consume(ctx, cons, h, acks.WithLease(2*time.Second), acks.WithMaxMessages(n),
		acks.OnResult(func(r acks.Result) {
			if r.Action != acks.Processed {
				mu.Lock()
				bad = append(bad, r)
				mu.Unlock()
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range bad {
		t.Errorf("message %d: %s after %d deliveries (final %v): %v", r.Seq, r.Action, r.Deliveries, r.Final, r.Err)
	}
	if sum.Processed != n || sum.Terminated != 0 {
		t.Errorf("summary %+v: want %d processed, none terminated", sum, n)
	}
	tl.exactlyOnce(t, n)
}

// The watch over a message's last delivery is written with the records'
// retention as its TTL: it never outlives the done record written after
// it, so a watch left behind (its run stopped between the ack and the
// watch's removal) expires by itself rather than read, later, as a delivery
// that ended without an outcome.
func TestWatchExpiresWithTheRecords(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t, 60*time.Second)
	st, err := acks.Open(ctx, f.js, acks.WithBucket("SHORT"), acks.WithRetention(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	publish(t, f.js, "orders", 1, 1)
	cons := addConsumer(t, f.js, "ORDERS", "c", 5*time.Second, func(c *jetstream.ConsumerConfig) { c.MaxDeliver = 1 })
	kvStream, err := f.js.Stream(ctx, "KV_SHORT")
	if err != nil {
		t.Fatal(err)
	}
	var ttl string
	h := func(ctx context.Context, d acks.Delivery) error {
		// The watch over the last delivery is written before the handler
		// runs.
		m, err := kvStream.GetLastMsgForSubject(ctx, "$KV.SHORT.d.ORDERS.c.s1")
		if err != nil {
			return err
		}
		ttl = m.Header.Get(jetstream.MsgTTLHeader)
		return nil
	}
	sum, err := st.Consume(ctx, cons, h, acks.WithLease(10*time.Second), acks.WithMaxMessages(1))
	if err != nil || sum.Processed != 1 {
		t.Fatalf("run: %+v %v", sum, err)
	}
	if ttl != "2s" {
		t.Errorf("the watch was written with TTL %q, want the retention, 2s", ttl)
	}
	// The retention is shorter than the ack wait and two leases: the run
	// warns that a watch may expire before the server gives up.
	if len(sum.Warnings) != 1 || !strings.Contains(sum.Warnings[0], "less than the ack wait and two leases") {
		t.Errorf("warnings %q: want the one on a retention too short for watches", sum.Warnings)
	}
}

// lostTerm is a message whose terminate never reaches the server, as when
// jsctl dies between the final failed record and the terminate.
type lostTerm struct{ jetstream.Msg }

func (lostTerm) Term() error                 { return nil }
func (lostTerm) TermWithReason(string) error { return nil }

// A message that failed for good, whose terminate was lost, is delivered
// again: it is terminated then, with its final failed record kept, and its
// handler does not run again (a rewind, which delivers it from delivery 1,
// runs it again on purpose).
func TestFinalFailureWithLostTerminate(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t, 30*time.Second)
	publish(t, f.js, "orders", 1, 1)
	cons := addConsumer(t, f.js, "ORDERS", "c", time.Second)
	fail := func(context.Context, acks.Delivery) error { return errors.New("boom") }
	r, err := f.st.Process(ctx, lostTerm{next(t, cons)}, fail, acks.WithMaxFailures(1))
	if !r.Final {
		t.Fatalf("first delivery: %+v %v", r, err)
	}
	ran := false
	r, err = f.st.Process(ctx, next(t, cons), func(context.Context, acks.Delivery) error { ran = true; return nil }, acks.WithMaxFailures(1))
	if ran || r.Action != acks.Failed || !r.Final || r.Deliveries != 2 {
		t.Fatalf("redelivery after the lost terminate: ran %v, %+v %v", ran, r, err)
	}
	if m, err := cons.Next(jetstream.FetchMaxWait(1500 * time.Millisecond)); err == nil {
		t.Fatalf("message %v delivered again after its terminate", m)
	}
	rec, err := f.st.Get(ctx, "ORDERS.c", acks.KeyFromSequence, "1")
	if err != nil || rec.State != acks.StateFailed || !rec.Final {
		t.Fatalf("record: %+v %v", rec, err)
	}
}

// A denial that is not the run's does not stop it: one the connection
// reported before Consume started (an earlier publish to the dead-letter
// subject, in a run that never dead-letters anything), and one of another
// operation on the bucket (a delete, from the handler).
func TestOtherDenialsAreNotTheRuns(t *testing.T) {
	s, err := testserver.NewAuth(t.TempDir(), "DENIED", testserver.Auth{User: "u", Password: "pw",
		Deny: []string{"dead.orders", "$JS.API.STREAM.DELETE.KV_JSCTL_ACKS"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	nc, err := nats.Connect(s.URL, nats.UserInfo("u", "pw"), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t, 30*time.Second)
	addStream(t, js, "ORDERS", 1)
	addDeadStream(t, js)
	publish(t, js, "orders", 1, 3)
	if err := nc.Publish("dead.orders", []byte("x")); err != nil {
		t.Fatal(err)
	}
	testserver.WaitFor(t, 10*time.Second, "the server to refuse the publish", func() bool {
		return errors.Is(nc.LastError(), nats.ErrPermissionViolation)
	})
	st, err := acks.Open(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	cons := addConsumer(t, js, "ORDERS", "c", 30*time.Second)
	tl := newTally()
	h := tl.handler(func(d acks.Delivery) error {
		if d.Seq == 1 {
			dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer cancel()
			if err := js.DeleteKeyValue(dctx, acks.DefaultBucket); err == nil {
				return errors.New("the bucket's delete was allowed")
			}
			testserver.WaitFor(t, 10*time.Second, "the server to refuse the delete", func() bool {
				return strings.Contains(nc.LastError().Error(), "STREAM.DELETE")
			})
		}
		return nil
	})
	sum, err := st.Consume(ctx, cons, h, acks.WithDeadLetter("dead.orders"), acks.WithMaxMessages(3))
	if err != nil || sum.Processed != 3 {
		t.Fatalf("run: %+v %v", sum, err)
	}
	tl.exactlyOnce(t, 3)
}
