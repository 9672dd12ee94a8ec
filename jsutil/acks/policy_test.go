package acks_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func pubJSON(t *testing.T, js jetstream.JetStream, subject, data string, hdr ...string) uint64 {
	t.Helper()
	m := nats.NewMsg(subject)
	m.Data = []byte(data)
	for i := 0; i+1 < len(hdr); i += 2 {
		m.Header.Set(hdr[i], hdr[i+1])
	}
	ack, err := js.PublishMsg(testCtx(t, 10*time.Second), m)
	if err != nil {
		t.Fatal(err)
	}
	return ack.Sequence
}

func mustSpec(t *testing.T, s string) acks.KeySpec {
	t.Helper()
	k, err := acks.ParseKeySpec(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Keys from JSON fields and subject tokens make records that keep their
// spec; a message without the field is keyed by its sequence, or, with a
// required key, fails for good without running the handler.
func TestKeySpecsInRecords(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t, 60*time.Second)
	pubJSON(t, f.js, "orders.eu", `{"order":{"id":"A-1"}}`)
	pubJSON(t, f.js, "orders.us", `{"order":{"id":"A-1"}}`) // same id, another region
	pubJSON(t, f.js, "orders.eu", `{"order":{"id":"A-1"}}`) // a duplicate
	pubJSON(t, f.js, "orders.eu", `not json`)
	tl := newTally()
	cons := addConsumer(t, f.js, "ORDERS", "c", 30*time.Second)
	sum, err := f.st.Consume(ctx, cons, tl.handler(nil), acks.WithMaxMessages(4),
		acks.WithKey(mustSpec(t, "subject:2"), mustSpec(t, "json:order.id")))
	if err != nil || sum.Processed != 3 || sum.Duplicates != 1 {
		t.Fatalf("%+v %v", sum, err)
	}
	want := map[string]acks.Record{
		"eu|A-1": {KeyFrom: acks.KeyFromParts, Seq: 1, KeySpec: "subject:2 + json:order.id"},
		"us|A-1": {KeyFrom: acks.KeyFromParts, Seq: 2, KeySpec: "subject:2 + json:order.id"},
		"4":      {KeyFrom: acks.KeyFromSequence, Seq: 4, KeySpec: "seq"},
	}
	recs, err := f.st.List(ctx, acks.Filter{Scope: "ORDERS.c"})
	if err != nil || len(recs) != len(want) {
		t.Fatalf("records: %+v %v", recs, err)
	}
	for _, r := range recs {
		w, ok := want[r.Key]
		if !ok || r.KeyFrom != w.KeyFrom || r.Seq != w.Seq || r.KeySpec != w.KeySpec || r.State != acks.StateDone {
			t.Errorf("record %+v, want %+v", r, w)
		}
	}
	if r, err := f.st.FindRecord(ctx, "ORDERS.c", "us|A-1"); err != nil || r.Seq != 2 {
		t.Errorf("FindRecord: %+v %v", r, err)
	}

	// Required: the message without the field fails for good, unrun.
	pubJSON(t, f.js, "orders.eu", `{"order":{}}`)
	pubJSON(t, f.js, "orders.eu", `{"order":{"id":"B-2"}}`)
	var results []acks.Result
	sum, err = f.st.Consume(ctx, cons, tl.handler(nil), acks.WithMaxMessages(2), acks.WithKeyRequired(),
		acks.WithKey(mustSpec(t, "json:order.id")), acks.OnResult(func(r acks.Result) { results = append(results, r) }))
	if err != nil || sum.Processed != 1 || sum.Terminated != 1 || tl.snapshot()[5] != 0 {
		t.Fatalf("required: %+v %v, runs %v", sum, err, tl.snapshot())
	}
	r, err := f.st.Get(ctx, "ORDERS.c", acks.KeyFromSequence, "5")
	if err != nil || r.State != acks.StateFailed || !r.Final || !strings.Contains(r.Reason, "no JSON field order.id") {
		t.Fatalf("record of the message without a key: %+v %v", r, err)
	}
	for _, res := range results {
		if res.Seq == 5 && (res.KeyMissing != "no JSON field order.id" || !res.Final || !errors.Is(res.Err, jsutil.ErrBadInput)) {
			t.Errorf("result: %+v (%v)", res, res.Err)
		}
	}
}

// Records are written with the retention as their TTL, say so, and the
// server removes them when it runs out; the floor still makes a replay of
// their messages duplicates.
func TestRetentionExpiresRecords(t *testing.T) {
	js := newJS(t, testserver.Start(t))
	addStream(t, js, "ORDERS", 1)
	ctx := testCtx(t, 60*time.Second)
	st, err := acks.Open(ctx, js, acks.WithRetention(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	publish(t, js, "orders", 1, 3)
	tl := newTally()
	sum := consumeAll(t, st, addConsumer(t, js, "ORDERS", "c", 30*time.Second), tl, 3, tl.handler(nil))
	if sum.Processed != 3 || sum.Floor != 3 {
		t.Fatalf("%+v", sum)
	}
	recs, err := st.List(ctx, acks.Filter{Scope: "ORDERS.c"})
	if err != nil || len(recs) != 3 {
		t.Fatalf("records: %d %v", len(recs), err)
	}
	for _, r := range recs {
		if r.Retention != time.Second || r.Expires.Sub(r.Time) != time.Second {
			t.Errorf("record %d: retention %v, expires %v after it was written", r.Seq, r.Retention, r.Expires.Sub(r.Time))
		}
	}
	stats, err := st.Stats(ctx, "ORDERS.c")
	if err != nil || stats.RetentionNS != int64(time.Second) || stats.RetentionFrom != "records" {
		t.Fatalf("stats: %+v %v", stats, err)
	}
	// A store opened with another retention still reports the scope's own.
	other, err := acks.OpenExisting(ctx, js, acks.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	if s2, err := other.Stats(ctx, "ORDERS.c"); err != nil || s2.RetentionNS != int64(time.Second) {
		t.Fatalf("stats from another store: %+v %v", s2, err)
	}
	testserver.WaitFor(t, 20*time.Second, "the server to expire the records", func() bool {
		n, err := st.CountRange(ctx, "ORDERS.c", 1, 3)
		return err == nil && n == 0
	})
	if err := js.DeleteConsumer(ctx, "ORDERS", "c"); err != nil {
		t.Fatal(err)
	}
	var below atomic.Int32
	sum, err = st.Consume(ctx, addConsumer(t, js, "ORDERS", "c", 30*time.Second), tl.handler(nil), acks.WithMaxMessages(3),
		acks.OnResult(func(r acks.Result) {
			if r.BelowFloor {
				below.Add(1)
			}
		}))
	if err != nil || sum.Duplicates != 3 || below.Load() != 3 {
		t.Fatalf("replay after expiry: %+v %v (%d by the floor)", sum, err, below.Load())
	}
	tl.exactlyOnce(t, 3)
	// The consumer's floor outlives the records and still says how long
	// they were kept.
	if s3, err := other.Stats(ctx, "ORDERS.c"); err != nil || s3.RetentionFrom != "records" || s3.RetentionNS != int64(time.Second) {
		t.Fatalf("stats with no record left: %+v %v", s3, err)
	}
	if info, err := other.RangeRecords(ctx, "ORDERS.c", 1, 3); err != nil || info.Records != 0 || !info.RetentionKnown || info.Retention != time.Second {
		t.Fatalf("RangeRecords: %+v %v", info, err)
	}
}

// --on-duplicate run: the handler runs on a duplicate, told which record
// it duplicates, without a claim; the record is left as it was.
func TestDuplicateRunPolicy(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t, 30*time.Second)
	pubJSON(t, f.js, "orders.1", "payload", "Order-Id", "same")
	pubJSON(t, f.js, "orders.1", "payload", "Order-Id", "same")
	cons := addConsumer(t, f.js, "ORDERS", "c", 30*time.Second)
	first, err := f.st.Process(ctx, next(t, cons), func(context.Context, acks.Delivery) error { return nil }, byOrder)
	if err != nil || first.Action != acks.Processed {
		t.Fatal(first, err)
	}
	before, err := f.st.Get(ctx, "ORDERS.c", acks.KeyFromHeader, "same")
	if err != nil {
		t.Fatal(err)
	}
	var got acks.Delivery
	r, err := f.st.Process(ctx, next(t, cons), func(_ context.Context, d acks.Delivery) error { got = d; return nil },
		acks.WithOnDuplicate(acks.DuplicateRun), byOrder)
	if err != nil || r.Action != acks.Processed || !r.DuplicateRun || r.RecordSeq != 1 {
		t.Fatalf("duplicate run: %+v %v", r, err)
	}
	if !got.Duplicate || got.DuplicateOf != 1 || !got.DuplicateTime.Equal(before.Time) || got.Fence != 0 || got.Mismatch || got.Seq != 2 {
		t.Errorf("delivery: %+v", got)
	}
	after, err := f.st.Get(ctx, "ORDERS.c", acks.KeyFromHeader, "same")
	if err != nil || after.Revision != before.Revision || after.Seq != 1 {
		t.Errorf("record changed: %+v -> %+v (%v)", before, after, err)
	}
	// The default skips it.
	pubJSON(t, f.js, "orders.1", "payload", "Order-Id", "same")
	r, err = f.st.Process(ctx, next(t, cons), func(context.Context, acks.Delivery) error { t.Error("ran a duplicate"); return nil }, byOrder)
	if err != nil || r.Action != acks.Duplicate || r.DuplicateRun {
		t.Fatalf("skip: %+v %v", r, err)
	}
}

// --on-mismatch: report skips (as a duplicate) and reports, run runs with
// Mismatch set, fail terminates (dead-lettered) and keeps the done record.
func TestMismatchPolicies(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t, 30*time.Second)
	addDeadStream(t, f.js)
	cons := addConsumer(t, f.js, "ORDERS", "c", 30*time.Second)
	pubJSON(t, f.js, "orders.1", "first", "Order-Id", "k")
	if r, err := f.st.Process(ctx, next(t, cons), func(context.Context, acks.Delivery) error { return nil }, byOrder); err != nil || r.Action != acks.Processed {
		t.Fatal(r, err)
	}
	sub := deadSub(t, f.js)
	for _, tc := range []struct {
		policy acks.MismatchPolicy
		action acks.Action
		ran    bool
	}{{acks.MismatchReport, acks.Duplicate, false}, {acks.MismatchRun, acks.Processed, true}, {acks.MismatchFail, acks.Failed, false}} {
		seq := pubJSON(t, f.js, "orders.1", "other "+string(tc.policy), "Order-Id", "k")
		ran := false
		var d acks.Delivery
		r, _ := f.st.Process(ctx, next(t, cons), func(_ context.Context, dd acks.Delivery) error { ran, d = true, dd; return nil },
			acks.WithOnMismatch(tc.policy), acks.WithDeadLetter("dead.orders"), byOrder)
		if r.Action != tc.action || ran != tc.ran || !r.Mismatch || r.Seq != seq {
			t.Errorf("%s: %+v, ran %v", tc.policy, r, ran)
		}
		if tc.ran && (!d.Mismatch || !d.Duplicate || d.DuplicateOf != 1) {
			t.Errorf("%s: delivery %+v", tc.policy, d)
		}
		if tc.policy == acks.MismatchFail {
			if !r.Final || r.DeadLetterSeq != 1 || !errors.Is(r.Err, jsutil.ErrConflict) {
				t.Errorf("fail: %+v (%v)", r, r.Err)
			}
			m, err := sub.NextMsg(10 * time.Second)
			if err != nil || string(m.Data) != "other fail" || m.Header.Get(acks.DeadLetterSeqHdr) != fmt.Sprint(seq) {
				t.Fatalf("dead letter: %v %v", m, err)
			}
		}
	}
	if rec, err := f.st.Get(ctx, "ORDERS.c", acks.KeyFromHeader, "k"); err != nil || rec.State != acks.StateDone || rec.Seq != 1 {
		t.Errorf("done record: %+v %v", rec, err)
	}
}

var byOrder = acks.WithKeyHeader("Order-Id")

func addDeadStream(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	if _, err := js.CreateStream(testCtx(t, 10*time.Second), jetstream.StreamConfig{Name: "DEAD", Subjects: []string{"dead.>"}, Duplicates: time.Hour}); err != nil {
		t.Fatal(err)
	}
}

// deadSub is a plain core NATS subscription on the dead-letter subjects.
func deadSub(t *testing.T, js jetstream.JetStream) *nats.Subscription {
	t.Helper()
	sub, err := js.Conn().SubscribeSync("dead.>")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return sub
}

// A message failing on its last allowed delivery is published to the
// dead-letter subject with its payload and headers and the original's
// coordinates, recorded, and terminated; a replay publishes nothing twice
// and does not run it again.
func TestDeadLetter(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t, 60*time.Second)
	addDeadStream(t, f.js)
	sub := deadSub(t, f.js)
	pubJSON(t, f.js, "orders.1", "fine", "Nats-Msg-Id", "o-1")
	bad := pubJSON(t, f.js, "orders.2", "bad \x00\xff payload", "Nats-Msg-Id", "o-2", "Trace", "t-9")
	cons := addConsumer(t, f.js, "ORDERS", "c", 30*time.Second, func(c *jetstream.ConsumerConfig) { c.MaxDeliver = 2 })
	var runs atomic.Int32
	h := func(_ context.Context, d acks.Delivery) error {
		if d.Seq == bad {
			runs.Add(1)
			return errors.New("boom:\nsecond line")
		}
		return nil
	}
	opts := []acks.ConsumeOption{acks.WithIdle(time.Second), acks.WithRetryDelay(100 * time.Millisecond), acks.WithDeadLetter("dead.orders")}
	sum, err := f.st.Consume(ctx, cons, h, opts...)
	if err != nil || sum.Terminated != 1 || sum.DeadLettered != 1 || runs.Load() != 2 {
		t.Fatalf("%+v %v, %d runs", sum, err, runs.Load())
	}
	m, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Data) != "bad \x00\xff payload" {
		t.Errorf("payload %q", m.Data)
	}
	for k, v := range map[string]string{
		acks.DeadLetterStreamHdr: "ORDERS", acks.DeadLetterConsumerHdr: "c", acks.DeadLetterScopeHdr: "ORDERS.c",
		acks.DeadLetterSeqHdr: fmt.Sprint(bad), acks.DeadLetterSubjectHdr: "orders.2", acks.DeadLetterKeyHdr: "o-2",
		acks.DeadLetterKeySpecHdr: "header:Nats-Msg-Id", acks.DeadLetterDeliveriesHdr: "2", acks.DeadLetterFailuresHdr: "2",
		acks.DeadLetterErrorHdr: `boom:\nsecond line`, "Trace": "t-9", "Jsctl-Original-Nats-Msg-Id": "o-2",
	} {
		if got := m.Header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	if tm, err := time.Parse(time.RFC3339Nano, m.Header.Get(acks.DeadLetterTimeHdr)); err != nil || time.Since(tm) > time.Minute {
		t.Errorf("time header %q: %v", m.Header.Get(acks.DeadLetterTimeHdr), err)
	}
	if !strings.HasPrefix(m.Header.Get(nats.MsgIdHdr), "jsctl-dl:JSCTL_ACKS:") {
		t.Errorf("msg id %q", m.Header.Get(nats.MsgIdHdr))
	}
	r, err := f.st.Get(ctx, "ORDERS.c", acks.KeyFromHeader, "o-2")
	if err != nil || r.State != acks.StateFailed || !r.Final || r.DeadLetter == nil || r.DeadLetter.Pending ||
		r.DeadLetter.Stream != "DEAD" || r.DeadLetter.Seq != 1 || r.DeadLetter.ID != m.Header.Get(nats.MsgIdHdr) {
		t.Fatalf("record: %+v %+v %v", r, r.DeadLetter, err)
	}

	// A replay (a recreated consumer) terminates it without running it or
	// publishing anything.
	if err := f.js.DeleteConsumer(ctx, "ORDERS", "c"); err != nil {
		t.Fatal(err)
	}
	cons = addConsumer(t, f.js, "ORDERS", "c", 30*time.Second, func(c *jetstream.ConsumerConfig) { c.MaxDeliver = 2 })
	sum, err = f.st.Consume(ctx, cons, h, opts...)
	if err != nil || runs.Load() != 2 || sum.DeadLettered != 0 || sum.Terminated != 1 || sum.Duplicates != 1 {
		t.Fatalf("replay: %+v %v, %d runs", sum, err, runs.Load())
	}
	if m, err := sub.NextMsg(200 * time.Millisecond); err == nil {
		t.Fatalf("a second dead letter: %v", m.Header)
	}
	if info := streamInfo(t, f.js, "DEAD"); info.State.Msgs != 1 {
		t.Errorf("dead-letter stream holds %d messages", info.State.Msgs)
	}
}

func streamInfo(t *testing.T, js jetstream.JetStream, name string) *jetstream.StreamInfo {
	t.Helper()
	st, err := js.Stream(testCtx(t, 10*time.Second), name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(testCtx(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// A dead letter that cannot be published (no stream captures the subject
// yet) stays pending in the record and the message is not terminated; its
// next delivery publishes it once the stream exists, without running the
// handler again.
func TestDeadLetterPendingIsFinishedByTheNextDelivery(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t, 30*time.Second)
	publish(t, f.js, "orders", 1, 1)
	cons := addConsumer(t, f.js, "ORDERS", "c", 30*time.Second)
	runs := 0
	h := func(context.Context, acks.Delivery) error { runs++; return errors.New("no") }
	opts := []acks.ProcessOption{acks.WithMaxFailures(1), acks.WithDeadLetter("dead.orders"), acks.WithRetryDelay(100 * time.Millisecond)}
	r, _ := f.st.Process(ctx, next(t, cons), h, opts...)
	if r.Action != acks.Failed || r.Final || r.Retry == 0 || !strings.Contains(fmt.Sprint(r.Err), "stays pending") {
		t.Fatalf("first: %+v (%v)", r, r.Err)
	}
	rec, err := f.st.Get(ctx, "ORDERS.c", acks.KeyFromSequence, "1")
	if err != nil || rec.DeadLetter == nil || !rec.DeadLetter.Pending || !rec.Final {
		t.Fatalf("pending record: %+v %v", rec, err)
	}
	addDeadStream(t, f.js)
	sub := deadSub(t, f.js)
	r, _ = f.st.Process(ctx, next(t, cons), h, opts...)
	if r.Action != acks.Failed || !r.Final || r.DeadLetterSeq != 1 || !r.DeadLettered || runs != 1 {
		t.Fatalf("second: %+v (%v), %d runs", r, r.Err, runs)
	}
	if m, err := sub.NextMsg(10 * time.Second); err != nil || string(m.Data) != "p1" {
		t.Fatalf("dead letter: %v %v", m, err)
	}
	if rec, err = f.st.Get(ctx, "ORDERS.c", acks.KeyFromSequence, "1"); err != nil || rec.DeadLetter.Pending || rec.DeadLetter.Seq != 1 {
		t.Fatalf("record: %+v %v", rec, err)
	}
}

// A worker that stopped on a message's last allowed delivery leaves a
// watch and no record (its claim ran out): a sweep dead-letters the message
// from the stream, once.
func TestSweepDeadLettersOfStoppedWorkers(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t, 30*time.Second)
	addDeadStream(t, f.js)
	sub := deadSub(t, f.js)
	publish(t, f.js, "orders", 1, 1, "Order-Id", "x-%d")
	cons := addConsumer(t, f.js, "ORDERS", "c", time.Second, func(c *jetstream.ConsumerConfig) { c.MaxDeliver = 1 })
	w := `{"st":"ORDERS","c":"c","q":1,"ls":"dead.orders","d":1,"k":"x-1","kf":"header","ks":"header:Order-Id"}`
	if _, err := f.st.KV().Put(ctx, "d.ORDERS.c.hx-1", []byte(w)); err != nil {
		t.Fatal(err)
	}
	// Not yet delivered: the consumer may still deliver it, so its delivery
	// decides, not the sweep.
	sw, err := f.st.SweepDeadLetters(ctx, "ORDERS.c", time.Second, "dead.orders")
	if err != nil || sw.Published != 0 {
		t.Fatalf("sweep before the server gave up: %+v %v", sw, err)
	}
	// Its one allowed delivery goes to a worker that dies: the server gives
	// up once the ack wait runs out (nothing awaits an ack any more).
	_ = next(t, cons)
	testserver.WaitFor(t, 10*time.Second, "the server to give up on the message", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumAckPending == 0
	})
	if sw, err = f.st.SweepDeadLetters(ctx, "ORDERS.c", time.Second, "dead.orders"); err != nil || sw.Published != 1 {
		t.Fatalf("sweep: %+v %v", sw, err)
	}
	m, err := sub.NextMsg(10 * time.Second)
	if err != nil || string(m.Data) != "p1" || m.Header.Get(acks.DeadLetterDeliveriesHdr) != "1" || !strings.Contains(m.Header.Get(acks.DeadLetterErrorHdr), "ended without an outcome") {
		t.Fatalf("dead letter: %v %v", m, err)
	}
	r, err := f.st.Get(ctx, "ORDERS.c", acks.KeyFromHeader, "x-1")
	if err != nil || !r.Final || r.DeadLetter == nil || r.DeadLetter.Seq != 1 || r.KeySpec != "header:Order-Id" {
		t.Fatalf("record: %+v %v", r, err)
	}
	if sw, err = f.st.SweepDeadLetters(ctx, "ORDERS.c", time.Second, "dead.orders"); err != nil || sw.Published != 0 {
		t.Fatalf("second sweep: %+v %v", sw, err)
	}
	if _, err := f.st.KV().Get(ctx, "d.ORDERS.c.hx-1"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("watch left: %v", err)
	}
}

// failed -> retry -> done: Retry reads the message from the stream and runs
// it through claim -> done; a failure keeps it failed (final).
func TestRetryRoundTrip(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t, 30*time.Second)
	publish(t, f.js, "orders", 1, 3)
	cons := addConsumer(t, f.js, "ORDERS", "c", 30*time.Second, func(c *jetstream.ConsumerConfig) { c.MaxDeliver = 1 })
	fail := atomic.Bool{}
	fail.Store(true)
	h := func(_ context.Context, d acks.Delivery) error {
		if d.Seq != 2 && !d.Retry {
			return nil
		}
		if fail.Load() {
			return errors.New("down")
		}
		return nil
	}
	if sum, err := f.st.Consume(ctx, cons, h, acks.WithMaxMessages(3)); err != nil || sum.Terminated != 1 {
		t.Fatalf("%+v %v", sum, err)
	}
	failed, err := f.st.List(ctx, acks.Filter{Scope: "ORDERS.c", State: acks.StateFailed})
	if err != nil || len(failed) != 1 || failed[0].Seq != 2 {
		t.Fatalf("failed: %+v %v", failed, err)
	}
	res, err := f.st.Retry(ctx, "ORDERS", failed, h)
	if err != nil || len(res) != 1 || res[0].Action != acks.Failed || !res[0].Final {
		t.Fatalf("retry while down: %+v %v", res, err)
	}
	if r, _ := f.st.Get(ctx, "ORDERS.c", acks.KeyFromSequence, "2"); r.State != acks.StateFailed || r.Failures != 1 || r.Reason != "down" {
		t.Fatalf("record: %+v", r)
	}
	fail.Store(false)
	var got acks.Delivery
	res, err = f.st.RetryBatch(ctx, "ORDERS", failed, func(_ context.Context, ds []acks.Delivery) ([]error, error) {
		got = ds[0]
		return nil, nil
	}, 10)
	if err != nil || len(res) != 1 || res[0].Action != acks.Processed || res[0].Fence == 0 {
		t.Fatalf("retry: %+v %v", res, err)
	}
	if !got.Retry || got.Seq != 2 || string(got.Msg.Data()) != "p2" || got.Subject != "orders.2" || got.Fence == 0 {
		t.Errorf("delivery: %+v", got)
	}
	if r, _ := f.st.Get(ctx, "ORDERS.c", acks.KeyFromSequence, "2"); r.State != acks.StateDone {
		t.Fatalf("record after retry: %+v", r)
	}
	// The stale selection again: the record is done now, so nothing runs.
	res, err = f.st.Retry(ctx, "ORDERS", failed, func(context.Context, acks.Delivery) error { t.Error("ran a done message"); return nil })
	if err != nil || res[0].Action != acks.Duplicate {
		t.Fatalf("retry of a done record: %+v %v", res, err)
	}
	if s, err := f.st.ScopeStream(ctx, "ORDERS.c"); err != nil || s != "ORDERS" {
		t.Errorf("ScopeStream: %q %v", s, err)
	}
}

// A bucket made with a max age of its own (by an earlier version) removes
// records at that age: the retention in effect and each record's expiry
// say so.
func TestRetentionCappedByBucketMaxAge(t *testing.T) {
	js := newJS(t, testserver.Start(t))
	addStream(t, js, "ORDERS", 1)
	ctx := testCtx(t, 30*time.Second)
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: acks.DefaultBucket, History: 1, TTL: time.Hour, LimitMarkerTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	st, err := acks.Open(ctx, js) // retention 7d
	if err != nil {
		t.Fatal(err)
	}
	publish(t, js, "orders", 1, 1)
	cons := addConsumer(t, js, "ORDERS", "c", 30*time.Second)
	if r, err := st.Process(ctx, next(t, cons), func(context.Context, acks.Delivery) error { return nil }); err != nil || r.Action != acks.Processed {
		t.Fatal(r, err)
	}
	r, err := st.Get(ctx, "ORDERS.c", acks.KeyFromSequence, "1")
	if err != nil || r.Retention != acks.DefaultRetention || r.Expires.Sub(r.Time) != time.Hour {
		t.Fatalf("record: retention %v, expires %v after it was written (%v)", r.Retention, r.Expires.Sub(r.Time), err)
	}
	stats, err := st.Stats(ctx, "ORDERS.c")
	if err != nil || stats.RetentionNS != int64(time.Hour) || stats.MaxAgeNS != int64(time.Hour) || st.Retention() != time.Hour {
		t.Fatalf("stats: %+v %v", stats, err)
	}
}

// Another message under the key of a dead-lettered one runs (it takes the
// failed record over, as any failed record); only deliveries of the
// dead-lettered message itself are terminated unrun.
func TestDeadLetteredKeyReusedByAnotherMessageRuns(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t, 30*time.Second)
	addDeadStream(t, f.js)
	pubJSON(t, f.js, "orders.1", "first", "Order-Id", "k")
	pubJSON(t, f.js, "orders.1", "second", "Order-Id", "k")
	cons := addConsumer(t, f.js, "ORDERS", "c", 30*time.Second)
	opts := []acks.ProcessOption{byOrder, acks.WithMaxFailures(1), acks.WithDeadLetter("dead.orders")}
	r, _ := f.st.Process(ctx, next(t, cons), func(context.Context, acks.Delivery) error { return errors.New("bad") }, opts...)
	if !r.Final || r.DeadLetterSeq != 1 {
		t.Fatalf("first: %+v (%v)", r, r.Err)
	}
	ran := false
	r, err := f.st.Process(ctx, next(t, cons), func(context.Context, acks.Delivery) error { ran = true; return nil }, opts...)
	if err != nil || r.Action != acks.Processed || !ran {
		t.Fatalf("second: %+v %v", r, err)
	}
	if rec, err := f.st.Get(ctx, "ORDERS.c", acks.KeyFromHeader, "k"); err != nil || rec.State != acks.StateDone || rec.Seq != 2 {
		t.Fatalf("record: %+v %v", rec, err)
	}
}
