package positions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// setup makes stream ORDERS with n messages on orders.eu.
func setup(t *testing.T, n int) (context.Context, jetstream.JetStream) {
	t.Helper()
	js := testserver.JetStream(t)
	ctx := testserver.Context(t, 60*time.Second)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if _, err := js.Publish(ctx, "orders.eu", fmt.Appendf(nil, "m%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	return ctx, js
}

// fetch pulls up to n messages as a plain client, acking each, and
// returns their stream sequences; it waits at most wait for them.
func fetch(t *testing.T, ctx context.Context, js jetstream.JetStream, consumer string, n int, wait time.Duration) []uint64 {
	t.Helper()
	c, err := js.Consumer(ctx, "ORDERS", consumer)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := c.Fetch(n, jetstream.FetchMaxWait(wait))
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for m := range batch.Messages() {
		md, err := m.Metadata()
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, md.Sequence.Stream)
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return seqs
}

// TestPauseStopsDelivery: a paused consumer delivers nothing to a plain
// pull client, not even to a pull request waiting on it, and delivers from
// where it stopped once resumed.
func TestPauseStopsDelivery(t *testing.T) {
	ctx, js := setup(t, 4)
	if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	if got := fetch(t, ctx, js, "billing", 1, time.Second); len(got) != 1 || got[0] != 1 {
		t.Fatalf("before the pause: fetched %v, want [1]", got)
	}
	st, err := Pause(ctx, js, "ORDERS", "billing", time.Now().Add(time.Hour), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !st.Paused || st.PauseUntil == nil || st.UntilResumed {
		t.Fatalf("pause state %+v, want paused for an hour", st)
	}

	// A pull request waiting on the paused consumer gets nothing.
	c, err := js.Consumer(ctx, "ORDERS", "billing")
	if err != nil {
		t.Fatal(err)
	}
	batch, err := c.Fetch(2, jetstream.FetchMaxWait(5*time.Second)) // long enough to be seen waiting on a slow machine
	if err != nil {
		t.Fatal(err)
	}
	testserver.WaitFor(t, 10*time.Second, "the pull request to wait", func() bool {
		info, err := c.Info(ctx)
		return err == nil && info.NumWaiting > 0
	})
	for m := range batch.Messages() {
		md, _ := m.Metadata()
		t.Fatalf("message %d delivered while paused", md.Sequence.Stream)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Paused || info.Delivered.Stream != 1 || info.NumPending != 3 {
		t.Fatalf("while paused: paused %v, delivered %d, pending %d; want paused at 1 with 3 pending", info.Paused, info.Delivered.Stream, info.NumPending)
	}

	// Resumed, it delivers from where it stopped, to a pull request that
	// was already waiting too (woken, not left until its heartbeat).
	waiting, err := c.Fetch(2, jetstream.FetchMaxWait(30*time.Second), jetstream.FetchHeartbeat(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	testserver.WaitFor(t, 10*time.Second, "the pull request to wait", func() bool {
		info, err := c.Info(ctx)
		return err == nil && info.NumWaiting > 0
	})
	resumed := time.Now()
	st, err = Resume(ctx, js, "ORDERS", "billing", Options{})
	if err != nil || st.Paused {
		t.Fatalf("resume: %+v, %v", st, err)
	}
	var seqs []uint64
	for m := range waiting.Messages() {
		md, _ := m.Metadata()
		seqs = append(seqs, md.Sequence.Stream)
		_ = m.Ack()
	}
	if fmt.Sprint(seqs) != "[2 3]" || time.Since(resumed) > 5*time.Second {
		t.Fatalf("after resume the waiting pull request got %v after %v, want [2 3] at once", seqs, time.Since(resumed))
	}

	// Until resumed: the server is given the year 9999.
	st, err = Pause(ctx, js, "ORDERS", "billing", UntilResumed(), Options{})
	if err != nil || !st.UntilResumed {
		t.Fatalf("pause until resumed: %+v, %v", st, err)
	}
	if got := fetch(t, ctx, js, "billing", 1, 300*time.Millisecond); len(got) != 0 {
		t.Fatalf("paused until resumed: fetched %v", got)
	}

	// Errors are classed and name the consumer.
	_, err = Pause(ctx, js, "ORDERS", "billing", time.Now().Add(-time.Second), Options{})
	if !errors.Is(err, jsutil.ErrBadInput) {
		t.Errorf("pause in the past: %v, want bad input", err)
	}
	_, err = Pause(ctx, js, "ORDERS", "nope", time.Now().Add(time.Hour), Options{})
	if !errors.Is(err, jsutil.ErrNotFound) || !strings.Contains(err.Error(), `pause consumer "nope" on "ORDERS"`) {
		t.Errorf("pause unknown consumer: %v", err)
	}
	_, err = Resume(ctx, js, "ORDERS", "a.b", Options{})
	if !errors.Is(err, jsutil.ErrBadInput) {
		t.Errorf("resume a.b: %v, want bad input", err)
	}
}

// TestSnapshotRecreatesDeletedConsumer: a snapshot holds what a restore
// needs to bring back a deleted consumer. Created again from the saved raw
// configuration (without the server's own metadata) at NextSequence, it
// has the same configuration and delivers the saved ack floor + 1 next.
func TestSnapshotRecreatesDeletedConsumer(t *testing.T) {
	ctx, js := setup(t, 10)
	cfg := jetstream.ConsumerConfig{
		Durable: "billing", Description: "bills", AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: 45 * time.Second, MaxDeliver: 7, BackOff: []time.Duration{time.Second, 5 * time.Second},
		FilterSubject: "orders.>", MaxAckPending: 99, Metadata: map[string]string{"team": "pay"},
	}
	if _, err := js.CreateConsumer(ctx, "ORDERS", cfg); err != nil {
		t.Fatal(err)
	}
	fetch(t, ctx, js, "billing", 4, 5*time.Second)
	snap, err := Save(ctx, js, "before", "test", Selection{Stream: "ORDERS", Consumers: []string{"billing"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Get(ctx, js, "before", Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(snap)
	b, _ := json.Marshal(got)
	if string(a) != string(b) {
		t.Fatalf("stored document differs:\nsaved %s\nread  %s", a, b)
	}
	cs := got.Streams[0].Consumers[0]
	if cs.AckFloor.StreamSeq != 4 || cs.NextSequence() != 5 || cs.AckFloor.Time == nil || got.Streams[0].LastSeq != 10 {
		t.Fatalf("saved consumer %+v", cs)
	}

	fetch(t, ctx, js, "billing", 3, 5*time.Second) // moves on to 7
	if err := js.DeleteConsumer(ctx, "ORDERS", "billing"); err != nil {
		t.Fatal(err)
	}
	cmps, err := Compare(ctx, js, got, Options{})
	if err != nil || len(cmps) != 1 || !cmps[0].Deleted {
		t.Fatalf("compare after delete: %+v, %v", cmps, err)
	}

	// Recreate as a restore will: the saved configuration, start at
	// NextSequence, server metadata left out.
	var raw map[string]any
	if err := json.Unmarshal(cs.Config, &raw); err != nil {
		t.Fatal(err)
	}
	md := raw["metadata"].(map[string]any)
	for k := range md {
		if strings.HasPrefix(k, "_nats.") {
			delete(md, k)
		}
	}
	raw["deliver_policy"], raw["opt_start_seq"] = "by_start_sequence", cs.NextSequence()
	body, _ := json.Marshal(map[string]any{"stream_name": "ORDERS", "config": raw, "action": "create"})
	if _, err := jsutil.Request(ctx, js, "CONSUMER.CREATE.ORDERS.billing", body, jsutil.RequestOptions{Timeout: 5 * time.Second, Once: true}); err != nil {
		t.Fatal(err)
	}
	if seqs := fetch(t, ctx, js, "billing", 1, 5*time.Second); fmt.Sprint(seqs) != "[5]" {
		t.Fatalf("recreated consumer delivered %v first, want [5] (saved ack floor + 1)", seqs)
	}
	cmps, err = Compare(ctx, js, got, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	for _, ch := range cmps[0].ConfigChanges {
		fields = append(fields, ch.Field)
	}
	if fmt.Sprint(fields) != "[deliver_policy opt_start_seq]" {
		t.Fatalf("recreated consumer's configuration differs in %v, want only the start position", fields)
	}
	if cmps[0].MovedMessages != 1 || cmps[0].MovedSequences != 1 {
		t.Fatalf("moved %d messages, %d sequences; want 1 and 1", cmps[0].MovedMessages, cmps[0].MovedSequences)
	}
}

func TestDecodeRefusesOtherDocuments(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{"version":2,"name":"x","streams":[]}`, "document version 2; this jsctl reads up to version 1"},
		{`{"name":"x"}`, "not a snapshot document"},
		{`not json`, "not a snapshot document"},
	} {
		_, err := Decode("x", []byte(tc.doc))
		if !errors.Is(err, jsutil.ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Decode(%s) = %v, want bad input with %q", tc.doc, err, tc.want)
		}
	}
}

// TestDecodeChecksNames: a document (anyone allowed to write the bucket or
// the file controls it) naming a stream or consumer no server can hold, or
// whose saved configuration names another consumer, is bad input naming
// the name and why; one listing a stream or consumer twice is read with
// each once, from its first entry.
func TestDecodeChecksNames(t *testing.T) {
	doc := func(streams string) []byte {
		return []byte(`{"version":1,"name":"x","streams":[` + streams + `]}`)
	}
	cons := func(name, config string, floor int) string {
		return fmt.Sprintf(`{"name":%s,"config":%s,"ack_floor":{"stream_seq":%d}}`, quote(name), config, floor)
	}
	for _, tc := range []struct{ doc, want string }{
		{`{"version":1,"name":"bad name","streams":[]}`, `snapshot "f": invalid snapshot name "bad name"`},
		{string(doc(`{"name":"*","consumers":[]}`)), `snapshot "f" holds an invalid stream name "*": it may not contain '.'`},
		{string(doc(`{"name":"","consumers":[]}`)), `invalid stream name "": it is empty`},
		{string(doc(`{"name":"O","consumers":[` + cons("bill.ing", "{}", 1) + `]}`)), `snapshot "f" holds an invalid consumer name "bill.ing" on stream "O": it may not contain '.'`},
		{string(doc(`{"name":"O","consumers":[` + cons("bill\x01 x", "{}", 1) + `]}`)), `invalid consumer name "bill\x01 x" on stream "O": it may not contain spaces`},
		{string(doc(`{"name":"O","consumers":[` + cons(strings.Repeat("c", 256), "{}", 1) + `]}`)), `it is longer than 255 bytes`},
		{string(doc(`{"name":"O","consumers":[` + cons("b", `{"durable_name":"a"}`, 1) + `]}`)), `snapshot "f", consumer "b" on stream "O": its saved configuration names consumer "a"`},
		{string(doc(`{"name":"O","consumers":[` + cons("b", `{"name":"a"}`, 1) + `]}`)), `its saved configuration names consumer "a"`},
		{string(doc(`{"name":"O","consumers":[` + cons("b", `[1]`, 1) + `]}`)), `its saved configuration is not a consumer configuration`},
	} {
		_, err := Decode("f", []byte(tc.doc))
		if !errors.Is(err, jsutil.ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Decode(%s) = %v, want bad input with %q", tc.doc, err, tc.want)
		}
	}

	snap, err := Decode("f", doc(`{"name":"O","consumers":[`+cons("b", `{"durable_name":"b"}`, 1)+`,`+cons("a", "null", 2)+`,`+cons("b", "{}", 3)+`]},`+
		`{"name":"P","consumers":[`+cons("b", "{}", 4)+`]},`+
		`{"name":"O","consumers":[`+cons("b", "{}", 5)+`,`+cons("c", "{}", 6)+`]}`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ss := range snap.Streams {
		for _, cs := range ss.Consumers {
			got = append(got, fmt.Sprintf("%s/%s@%d", ss.Name, cs.Name, cs.AckFloor.StreamSeq))
		}
	}
	if fmt.Sprint(got) != "[O/b@1 O/a@2 O/c@6 P/b@4]" {
		t.Errorf("read %v, want [O/b@1 O/a@2 O/c@6 P/b@4] (each consumer once, from its first entry)", got)
	}
}

func TestDiffConfig(t *testing.T) {
	saved := json.RawMessage(`{"ack_wait":30,"durable_name":"b","metadata":{"_nats.ver":"2.11","team":"a"},"filter_subjects":["a","b"]}`)
	now := json.RawMessage(`{"durable_name":"b","ack_wait":60,"metadata":{"team":"a","_nats.ver":"2.15"},"filter_subjects":["a","b"],"max_deliver":5}`)
	got, err := DiffConfig(saved, now)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	want := `[{"field":"ack_wait","saved":30,"now":60},{"field":"max_deliver","saved":null,"now":5}]`
	if string(b) != want {
		t.Fatalf("diff = %s\nwant   %s", b, want)
	}
}

func TestMatchStream(t *testing.T) {
	for _, tc := range []struct {
		patterns []string
		name     string
		want     bool
	}{
		{[]string{"ORD*"}, "ORDERS", true},
		{[]string{"ORD*"}, "PAYMENTS", false},
		{[]string{"X", "PAY?ENTS"}, "PAYMENTS", true},
		{[]string{"*"}, "KV_JSCTL_ACKS", false},
		{[]string{"*"}, "OBJ_files", false},
		{[]string{"KV_*"}, "KV_JSCTL_ACKS", true},
		{[]string{"*"}, "KVSTORE", true},
		{[]string{"[A-O]*"}, "ORDERS", true},
	} {
		if got := MatchStream(tc.patterns, tc.name); got != tc.want {
			t.Errorf("MatchStream(%q, %q) = %v, want %v", tc.patterns, tc.name, got, tc.want)
		}
	}
}

// TestEvaluate applies every threshold to a consumer read from a fake
// info: a value equal to a threshold passes, one above it raises.
func TestEvaluate(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	lastDelivery, lastAck := now.Add(-90*time.Second), now.Add(-10*time.Minute)
	c := &Consumer{
		Stream: "ORDERS", Name: "billing", LagMessages: 100, LagNS: int64(2 * time.Minute), LagKnown: true,
		Info: &jetstream.ConsumerInfo{
			Created: now.Add(-time.Hour), NumAckPending: 10, NumRedelivered: 3, NumWaiting: 2, Paused: true,
			Delivered: jetstream.SequenceInfo{Last: &lastDelivery}, AckFloor: jetstream.SequenceInfo{Last: &lastAck},
		},
	}
	f := func(v float64) *float64 { return &v }
	th := Thresholds{
		Lag:           Limit{Warn: f(100), Crit: f(1000)}, // equal: OK
		LagTime:       Limit{Warn: f(60), Crit: f(600)},   // 120s: warning
		AckPending:    Limit{Crit: f(5)},                  // critical
		Redelivered:   Limit{Warn: f(2)},                  // warning
		Waiting:       Limit{Warn: f(2)},                  // equal: OK
		LastDelivery:  Limit{Warn: f(60), Crit: f(90)},    // 90s: warning only
		LastAck:       Limit{Crit: f(300)},                // 600s: critical
		FailedRecords: Limit{Warn: f(0)},
		StaleClaims:   Limit{Crit: f(0)},
		Paused:        Warning,
	}
	r := Result{AckRecords: &AckRecords{Failed: 1, StaleClaims: 0}}
	r.evaluate(c, th, now)
	if r.Status != Critical {
		t.Errorf("status %v, want CRITICAL", r.Status)
	}
	want := []string{
		"lag time 2m0s > 1m0s (warning)", "ack pending 10 > 5 (critical)", "redelivered 3 > 2 (warning)",
		"last delivery 1m30s ago > 1m0s (warning)", "last ack 10m0s ago > 5m0s (critical)", "paused (warning)",
		"failed records 1 > 0 (warning)",
	}
	if strings.Join(r.Problems, "; ") != strings.Join(want, "; ") {
		t.Errorf("problems:\n%s\nwant\n%s", strings.Join(r.Problems, "; "), strings.Join(want, "; "))
	}
	status := map[string]Status{}
	for _, m := range r.Metrics {
		status[m.Name] = m.Status
	}
	wantStatus := map[string]Status{
		MetricLag: OK, MetricLagTime: Warning, MetricAckPending: Critical, MetricRedelivered: Warning, MetricWaiting: OK,
		MetricLastDelivery: Warning, MetricLastAck: Critical, MetricPaused: Warning, MetricFailedRecords: Warning, MetricStaleClaims: OK,
	}
	if fmt.Sprint(status) != fmt.Sprint(wantStatus) {
		t.Errorf("metric statuses %v, want %v", status, wantStatus)
	}

	// Never delivered or acked: ages count from the consumer's creation.
	c.Info.Delivered.Last, c.Info.AckFloor.Last, c.Info.Paused = nil, nil, false
	r = Result{}
	r.evaluate(c, Thresholds{LastAck: Limit{Warn: f(3599), Crit: f(3600)}}, now)
	if r.Status != Warning || len(r.Metrics) != 8 {
		t.Errorf("never acked, created an hour ago: %v with %d metrics, want WARNING with 8 (no ack-record metrics)", r.Status, len(r.Metrics))
	}
}
