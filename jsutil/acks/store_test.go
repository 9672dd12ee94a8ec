package acks_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
)

func TestOpenCreatesBucket(t *testing.T) {
	js := newJS(t, testserver.Start(t))
	ctx := testCtx(t, 20*time.Second)
	if _, err := acks.OpenExisting(ctx, js, acks.DefaultBucket); !errors.Is(err, jsutil.ErrNotFound) {
		t.Fatalf("OpenExisting on a missing bucket: %v, want not found", err)
	}
	st, err := acks.Open(ctx, js, acks.WithRetention(48*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	status, err := st.KV().Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// No max age: every record carries its own TTL.
	if status.History() != 1 || status.TTL() != 0 || status.LimitMarkerTTL() != acks.DefaultMarkerTTL {
		t.Errorf("bucket: history %d ttl %v markers %v", status.History(), status.TTL(), status.LimitMarkerTTL())
	}
	if st.Retention() != 48*time.Hour {
		t.Errorf("retention %v, want 48h", st.Retention())
	}
	if _, err := acks.Open(ctx, js); err != nil {
		t.Fatalf("second Open: %v", err)
	}
	if _, err := acks.OpenExisting(ctx, js, acks.DefaultBucket); err != nil {
		t.Fatalf("OpenExisting: %v", err)
	}
}

func TestOpenRefusesIncompatibleBucket(t *testing.T) {
	js := newJS(t, testserver.Start(t))
	ctx := testCtx(t, 20*time.Second)
	for _, tc := range []struct {
		cfg  jetstream.KeyValueConfig
		want string
	}{
		{jetstream.KeyValueConfig{Bucket: "HIST", History: 5, LimitMarkerTTL: time.Minute}, `bucket "HIST" keeps history 5`},
		{jetstream.KeyValueConfig{Bucket: "NOMARK", History: 1}, `bucket "NOMARK" has no limit markers`},
	} {
		kv, err := js.CreateKeyValue(ctx, tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.PutString(ctx, "r.A.B.s1", "keep"); err != nil {
			t.Fatal(err)
		}
		for _, open := range []func() error{
			func() error { _, err := acks.Open(ctx, js, acks.WithBucket(tc.cfg.Bucket)); return err },
			func() error { _, err := acks.OpenExisting(ctx, js, tc.cfg.Bucket); return err },
		} {
			err := open()
			if !errors.Is(err, jsutil.ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("open %s: %v, want bad input %q", tc.cfg.Bucket, err, tc.want)
			}
		}
		e, err := kv.Get(ctx, "r.A.B.s1")
		if err != nil || string(e.Value()) != "keep" || e.Revision() != 1 {
			t.Errorf("bucket %s changed: %v %v", tc.cfg.Bucket, e, err)
		}
		st, _ := kv.Status(ctx)
		if st.History() != int64(max(tc.cfg.History, 1)) {
			t.Errorf("bucket %s history changed to %d", tc.cfg.Bucket, st.History())
		}
	}
	if _, err := acks.Open(ctx, js, acks.WithBucket("bad.name")); !errors.Is(err, jsutil.ErrBadInput) {
		t.Errorf("bad bucket name: %v", err)
	}
}

func TestScopesAndKeys(t *testing.T) {
	if got := acks.DefaultScope("ORDERS", "billing"); got != "ORDERS.billing" {
		t.Errorf("DefaultScope = %q", got)
	}
	if acks.ScopeName("ORDERS.billing") != acks.DefaultScope("ORDERS", "billing") {
		t.Error("ScopeName and DefaultScope disagree")
	}
	odd := acks.DefaultScope("ÄÖ$str", "con sumer=1")
	if err := acks.CheckScope(odd); err != nil {
		t.Errorf("CheckScope(%q): %v", odd, err)
	}
	if got := acks.ScopeDisplay(odd); got != "ÄÖ$str.con sumer=1" {
		t.Errorf("ScopeDisplay = %q", got)
	}
	for _, bad := range []string{"", "a..b", "a b", "a.*", "a.>", "=zz"} {
		if err := acks.CheckScope(bad); !errors.Is(err, jsutil.ErrBadInput) {
			t.Errorf("CheckScope(%q) = %v, want bad input", bad, err)
		}
	}
}

func TestOddNamesMakeValidKeys(t *testing.T) {
	js := newJS(t, testserver.Start(t))
	ctx := testCtx(t, 30*time.Second)
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "odd-Ström_1", Subjects: []string{"orders.>"}})
	if err != nil {
		t.Fatal(err)
	}
	cons := addConsumer(t, js, "odd-Ström_1", "c-ü_2", 30*time.Second)
	publish(t, js, "orders", 1, 3, "Nats-Msg-Id", "id with spaces/.*>=%d\u00e9")
	st, err := acks.Open(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	tl := newTally()
	sum := consumeAll(t, st, cons, tl, 3, tl.handler(nil))
	if sum.Processed != 3 {
		t.Fatalf("summary %+v", sum)
	}
	scope := acks.DefaultScope("odd-Ström_1", "c-ü_2")
	r, err := st.Get(ctx, scope, acks.KeyFromHeader, "id with spaces/.*>=2é")
	if err != nil || r.Seq != 2 || r.State != acks.StateDone {
		t.Fatalf("record: %+v %v", r, err)
	}
}

func TestCorruptRecordIsReportedNotOverwritten(t *testing.T) {
	s := testserver.Start(t)
	js := newJS(t, s)
	ctx := testCtx(t, 30*time.Second)
	addStream(t, js, "ORDERS", 1)
	cons := addConsumer(t, js, "ORDERS", "c", 30*time.Second)
	publish(t, js, "orders", 1, 1)
	st, err := acks.Open(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	key := "r.ORDERS.c.s1"
	rev, err := st.KV().PutString(ctx, key, "{not json")
	if err != nil {
		t.Fatal(err)
	}
	msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	res, err := st.Process(ctx, msg, func(ctx context.Context, d acks.Delivery) error { ran = true; return nil })
	if res.Action != acks.Failed || !errors.Is(err, jsutil.ErrBadInput) || !strings.Contains(err.Error(), `ack record "r.ORDERS.c.s1" in bucket "JSCTL_ACKS" is corrupt`) {
		t.Fatalf("Process on a corrupt record: %v %v", res.Action, err)
	}
	if ran {
		t.Error("handler ran")
	}
	e, err := st.KV().Get(ctx, key)
	if err != nil || e.Revision() != rev {
		t.Errorf("corrupt record was changed: %v", err)
	}
	if _, err := st.List(ctx, acks.Filter{Scope: "ORDERS.c"}); !errors.Is(err, jsutil.ErrBadInput) {
		t.Errorf("List over a corrupt record: %v", err)
	}
	var bad []error
	recs, err := st.List(ctx, acks.Filter{Scope: "ORDERS.c", SkipCorrupt: func(e error) { bad = append(bad, e) }})
	if err != nil || len(recs) != 0 || len(bad) != 1 {
		t.Errorf("List skipping corrupt: %v %v %v", recs, bad, err)
	}
	// Stats counts it and names it by key, and gives why.
	bad = nil
	stats, err := st.Stats(ctx, "ORDERS.c", func(e error) { bad = append(bad, e) })
	if err != nil || stats.Corrupt != 1 || !slices.Equal(stats.CorruptKeys, []string{key}) || len(bad) != 1 || !strings.Contains(bad[0].Error(), key) {
		t.Errorf("Stats over a corrupt record: %+v %v %v", stats, bad, err)
	}
}

func TestUnknownScope(t *testing.T) {
	js := newJS(t, testserver.Start(t))
	ctx := testCtx(t, 20*time.Second)
	st, err := acks.Open(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Stats(ctx, "NOPE.none"); !errors.Is(err, jsutil.ErrNotFound) || !strings.Contains(err.Error(), `scope "NOPE.none" has no ack records`) {
		t.Errorf("Stats: %v", err)
	}
	if err := st.KnownScope(ctx, "NOPE.none"); !errors.Is(err, jsutil.ErrNotFound) {
		t.Errorf("KnownScope: %v", err)
	}
	if n, err := st.CountRange(ctx, "NOPE.none", 1, 100); n != 0 || err != nil {
		t.Errorf("CountRange: %d %v", n, err)
	}
	if n, err := st.ForgetRange(ctx, "NOPE.none", 1, 100); n != 0 || err != nil {
		t.Errorf("ForgetRange: %d %v", n, err)
	}
	if _, err := st.Get(ctx, "NOPE.none", acks.KeyFromSequence, "1"); !errors.Is(err, jsutil.ErrNotFound) {
		t.Errorf("Get: %v", err)
	}
	if _, err := st.CountRange(ctx, "bad scope", 1, 2); !errors.Is(err, jsutil.ErrBadInput) {
		t.Errorf("CountRange bad scope: %v", err)
	}
}

// Through a JetStream domain, lease renewals (published to the bucket's
// subject directly) reach the bucket like kv's own writes.
func TestLeaseRenewalThroughDomain(t *testing.T) {
	s := testserver.Start(t, func(o *server.Options) { o.JetStreamDomain = "hub" })
	nc := testserver.Connect(t, s)
	js, err := jetstream.NewWithDomain(nc, "hub")
	if err != nil {
		t.Fatal(err)
	}
	addStream(t, js, "ORDERS", 1)
	publish(t, js, "orders", 1, 1)
	ctx := testCtx(t, 30*time.Second)
	st, err := acks.Open(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	cons := addConsumer(t, js, "ORDERS", "c", 30*time.Second)
	m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.Process(ctx, m, func(ctx context.Context, d acks.Delivery) error {
		// Outlive two renewals (every 0.5s; with a 2s lease one may be
		// 1s late before the claim counts as lost).
		testserver.WaitFor(t, 10*time.Second, "two renewals", func() bool {
			rec, err := st.Get(ctx, d.Scope, d.KeyFrom, d.Key)
			return err == nil && rec.Revision >= d.Fence+2
		})
		return ctx.Err()
	}, acks.WithLease(2*time.Second))
	if err != nil || r.Action != acks.Processed {
		t.Fatalf("%+v %v", r, err)
	}
}

// A header value too long for a key token is keyed by its hash and kept in
// the record.
func TestLongKeyHeader(t *testing.T) {
	f := newFixture(t)
	long := strings.Repeat("/.*>", 800)
	publish(t, f.js, "orders", 1, 2, "Order-Id", long)
	cons := addConsumer(t, f.js, "ORDERS", "c", 30*time.Second)
	ctx := testCtx(t, 20*time.Second)
	tl := newTally()
	for _, want := range []acks.Action{acks.Processed, acks.Duplicate} {
		r, err := f.st.Process(ctx, next(t, cons), tl.handler(nil), acks.WithKeyHeader("Order-Id"))
		if err != nil || r.Action != want || r.Key != long {
			t.Fatalf("got %v %v, want %v", r.Action, err, want)
		}
	}
	rec, err := f.st.Get(ctx, "ORDERS.c", acks.KeyFromHeader, long)
	if err != nil || rec.Key != long || len(rec.KVKey) > 100 || rec.State != acks.StateDone {
		t.Fatalf("record %q (%d) %v", rec.KVKey, len(rec.Key), err)
	}
	recs, err := f.st.List(ctx, acks.Filter{Scope: "ORDERS.c"})
	if err != nil || len(recs) != 1 || recs[0].Key != long {
		t.Fatalf("list: %d %v", len(recs), err)
	}
}

// Names too long for a request are refused before any is sent: a bucket
// name past the server's limit and a scope whose record keys would
// overflow the protocol line are bad input, not a lost connection.
func TestOversizeNamesAreBadInput(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t, 10*time.Second)
	long := strings.Repeat("b", 10000)
	if _, err := acks.Open(ctx, f.js, acks.WithBucket(long)); !errors.Is(err, jsutil.ErrBadInput) || !strings.Contains(err.Error(), "(10000 bytes)") {
		t.Errorf("Open with a 10 KB bucket name: %v", err)
	}
	if _, err := acks.OpenExisting(ctx, f.js, "bad.name"); !errors.Is(err, jsutil.ErrBadInput) {
		t.Errorf("OpenExisting with a dotted bucket name: %v", err)
	}
	if _, err := f.st.Get(ctx, acks.ScopeName(long), acks.KeyFromSequence, "1"); !errors.Is(err, jsutil.ErrBadInput) || !strings.Contains(err.Error(), "ack scope of 10000 bytes") {
		t.Errorf("Get in a 10 KB scope: %v", err)
	}
	if !f.js.Conn().IsConnected() {
		t.Error("the connection was lost")
	}
}
