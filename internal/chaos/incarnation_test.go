package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The tests here act on something recorded earlier (a replica's copies, a
// history record, an intent record, a snapshot document) after the object
// it named was deleted and created again, or after the record was forged;
// each checks with a plain nats.go client that nothing was acted on
// wrongly, and each has a control that passes.

// TestFailoverRecreatedOrigin (issue 26, finding 2): origin O (old-1..10)
// is mirrored to M and sourced to S; O is deleted and created again with
// new-1..15. seek --origin answers exact only where the replica's copy is
// of the current O (checked against the payload), and says why elsewhere
// ("exact": false, the reason); consumer copy of a consumer whose next
// position is only among M's copies of the old O is refused (exit 5)
// unless --allow-inexact, and then delivers the first copy of the new O.
// On S every position is exact (the identity in Nats-Stream-Source).
func TestFailoverRecreatedOrigin(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	e := newEnv(t, natsproc.Options{})
	for _, cfg := range []jetstream.StreamConfig{
		{Name: "O", Subjects: []string{"o.a"}},
		{Name: "M", Mirror: &jetstream.StreamSource{Name: "O"}},
		{Name: "S", Sources: []*jetstream.StreamSource{{Name: "O"}}},
	} {
		mustStream(t, e.js, cfg)
	}
	pub := func(prefix string, n int) {
		for i := 1; i <= n; i++ {
			if _, err := testserver.Publish(e.ctx(), e.js, &nats.Msg{Subject: "o.a", Data: fmt.Appendf(nil, "%s-%d", prefix, i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	holds := func(stream string, n uint64) {
		testserver.WaitFor(t, 2*time.Minute, fmt.Sprintf("%s to hold %d messages", stream, n), func() bool {
			s, err := e.js.Stream(e.ctx(), stream)
			return err == nil && s.CachedInfo().State.Msgs == n
		})
	}
	pub("old", 10)
	holds("M", 10)
	holds("S", 10)
	if err := e.js.DeleteStream(e.ctx(), "O"); err != nil {
		t.Fatal(err)
	}
	mustStream(t, e.js, jetstream.StreamConfig{Name: "O", Subjects: []string{"o.a"}})
	pub("new", 15)
	holds("M", 15)
	holds("S", 25)

	type seekDoc struct {
		Sequence uint64 `json:"sequence"`
		Method   string `json:"method"`
		Exact    bool   `json:"exact"`
		Reason   string `json:"reason"`
		Message  *struct {
			Sequence uint64 `json:"sequence"`
		} `json:"message"`
	}
	payload := func(stream string, seq uint64) string {
		s, err := e.js.Stream(e.ctx(), stream)
		if err != nil {
			t.Fatal(err)
		}
		m, err := s.GetMsg(e.ctx(), seq)
		if err != nil {
			return ""
		}
		return string(m.Data)
	}
	wrong, inexact := map[string]int{}, map[string]int{}
	for _, target := range []string{"M", "S"} {
		for seq := 1; seq <= 15; seq++ {
			code, out, errs := e.run("seek", target, "--origin", fmt.Sprintf("O:%d", seq), "--json")
			if code != 0 {
				t.Fatalf("seek %s --origin O:%d exited %d:\n%s\n%s", target, seq, code, out, errs)
			}
			var d seekDoc
			if err := json.Unmarshal([]byte(out), &d); err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			got := payload(target, d.Sequence)
			switch {
			case d.Exact && got != fmt.Sprintf("new-%d", seq):
				wrong[target]++
				t.Errorf("seek %s --origin O:%d: exact at %d, which holds %q", target, seq, d.Sequence, got)
			case !d.Exact:
				inexact[target]++
				if !strings.Contains(d.Reason, `came from an earlier stream "O"`) || !strings.HasPrefix(got, "new-") {
					t.Errorf("seek %s --origin O:%d: not exact at %d (%q), reason %q", target, seq, d.Sequence, got, d.Reason)
				}
			}
		}
	}
	if inexact["M"] != 10 || inexact["S"] != 0 {
		t.Errorf("not exact: %v; want the 10 positions M holds only old copies of", inexact)
	}
	code, out, _ := e.run("seek", "M", "--origin", "O:5")
	if code != 0 || !strings.Contains(out, `Method:   by-time (approximate: "M"'s copy at sequence 5 came from an earlier stream "O"`) {
		t.Errorf("seek M --origin O:5 (text) exited %d:\n%s", code, out)
	}

	// consumer copy of a consumer that had finished new-1..4.
	if _, err := e.js.CreateConsumer(e.ctx(), "O", jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	cons, _ := e.js.Consumer(e.ctx(), "O", "billing")
	if err := testserver.Take(cons, 4, 5*time.Second, func(m jetstream.Msg) error { return m.DoubleAck(e.ctx()) }); err != nil {
		t.Fatal(err)
	}
	code, out, errs := e.run("consumer", "copy", "O", "billing", "--to-stream", "M", "--execute")
	if code != 5 || !strings.Contains(errs, `came from an earlier stream "O"`) || !strings.Contains(errs, "pass --allow-inexact") {
		t.Fatalf("consumer copy to M exited %d, want 5 naming why:\n%s\n%s", code, out, errs)
	}
	if _, err := e.js.Consumer(e.ctx(), "M", "billing"); err == nil {
		t.Fatal("the refused copy created billing on M")
	}
	first := func(stream string) string {
		c, err := e.js.Consumer(e.ctx(), stream, "billing")
		if err != nil {
			t.Fatal(err)
		}
		m, err := c.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatalf("the copy on %s delivers nothing: %v", stream, err)
		}
		return string(m.Data())
	}
	if code, out, errs := e.run("consumer", "copy", "O", "billing", "--to-stream", "M", "--allow-inexact", "--execute"); code != 0 || !strings.Contains(out, "warning: translated by time") {
		t.Fatalf("consumer copy --allow-inexact exited %d:\n%s\n%s", code, out, errs)
	}
	if got := first("M"); got != "new-11" {
		t.Errorf("the copy on M delivers %q first, want new-11 (never an old copy)", got)
	}
	if code, out, errs := e.run("consumer", "copy", "O", "billing", "--to-stream", "S", "--execute"); code != 0 {
		t.Fatalf("consumer copy to S exited %d:\n%s\n%s", code, out, errs)
	}
	if got := first("S"); got != "new-5" {
		t.Errorf("the copy on S delivers %q first, want new-5", got)
	}
	t.Logf("SUMMARY failover after the origin was recreated: seek --origin positions 30 (M 15, S 15), exact and wrong %d, not exact %d (M %d, S %d); consumer copy to M refused, copied with --allow-inexact from new-11; to S exact from new-5",
		wrong["M"]+wrong["S"], inexact["M"]+inexact["S"], inexact["M"], inexact["S"])
}

// TestToPreviousRecreated (issue 26, finding 3): a consumer reset once,
// then deleted and added again (and, second, its whole stream recreated
// with 30 new messages): --to-previous --execute is refused (exit 5)
// naming both creation times, and the new consumer does not move. The
// control (the same consumer) undoes the reset.
func TestToPreviousRecreated(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	e := newEnv(t, natsproc.Options{})
	cfg := jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy}
	add := func() *jetstream.ConsumerInfo {
		if _, err := e.js.CreateConsumer(e.ctx(), "ORDERS", cfg); err != nil {
			t.Fatal(err)
		}
		return consumerInfo(t, e, "c")
	}
	add()
	fetchAck(t, e, "c", 10)
	if code, out, errs := e.run("consumer", "reset", "ORDERS", "c", "--to-seq", "2", "--execute"); code != 0 {
		t.Fatalf("reset exited %d:\n%s\n%s", code, out, errs)
	}
	old := consumerInfo(t, e, "c").Created.UTC().Format(time.RFC3339Nano)
	if err := e.js.DeleteConsumer(e.ctx(), "ORDERS", "c"); err != nil {
		t.Fatal(err)
	}
	now := add().Created.UTC().Format(time.RFC3339Nano)
	code, out, errs := e.run("consumer", "reset", "ORDERS", "c", "--to-previous", "--execute")
	want := fmt.Sprintf(`consumer "c" on "ORDERS" was deleted and created again since history revision 1 was recorded (created %s then, %s now)`, old, now)
	if code != 5 || !strings.Contains(errs, want) {
		t.Fatalf("--to-previous on the new consumer exited %d, want 5 with %q:\n%s\n%s", code, want, out, errs)
	}
	if ci := consumerInfo(t, e, "c"); ci.Delivered.Stream != 0 || ci.AckFloor.Stream != 0 {
		t.Fatalf("the refused undo moved the new consumer: delivered %d, ack floor %d", ci.Delivered.Stream, ci.AckFloor.Stream)
	}

	// The whole stream recreated with 30 new messages, c added again.
	s, _ := e.js.Stream(e.ctx(), "ORDERS")
	streamThen := s.CachedInfo().Created.UTC().Format(time.RFC3339Nano)
	if err := e.js.DeleteStream(e.ctx(), "ORDERS"); err != nil {
		t.Fatal(err)
	}
	s, err := e.js.CreateStream(e.ctx(), jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30; i++ {
		if _, err := e.js.Publish(e.ctx(), "orders.eu", []byte("new")); err != nil {
			t.Fatal(err)
		}
	}
	add()
	code, out, errs = e.run("consumer", "reset", "ORDERS", "c", "--to-previous", "--execute", "--json")
	want = fmt.Sprintf(`stream "ORDERS" was deleted and created again since history revision 1 was recorded (created %s then, %s now)`, streamThen, s.CachedInfo().Created.UTC().Format(time.RFC3339Nano))
	if code != 5 || !strings.Contains(errs, want) || !strings.Contains(out, `"refused": "`+strings.ReplaceAll(want, `"`, `\"`)) {
		t.Fatalf("--to-previous on the recreated stream exited %d, want 5 with %q:\n%s\n%s", code, want, out, errs)
	}
	if ci := consumerInfo(t, e, "c"); ci.Delivered.Stream != 0 || ci.NumPending != 30 {
		t.Fatalf("the refused undo moved the consumer: delivered %d, pending %d", ci.Delivered.Stream, ci.NumPending)
	}

	// Control: reset the consumer of the new stream, then undo it.
	fetchAck(t, e, "c", 10)
	if code, out, errs := e.run("consumer", "reset", "ORDERS", "c", "--to-seq", "3", "--execute"); code != 0 {
		t.Fatalf("reset exited %d:\n%s\n%s", code, out, errs)
	}
	if code, out, errs := e.run("consumer", "reset", "ORDERS", "c", "--to-previous", "--execute"); code != 0 {
		t.Fatalf("the control's undo exited %d:\n%s\n%s", code, out, errs)
	}
	if ci := consumerInfo(t, e, "c"); ci.AckFloor.Stream != 10 {
		t.Fatalf("the control's undo: ack floor %d, want 10", ci.AckFloor.Stream)
	}
}

// TestRecoverComparesBeforeActing (issue 26, finding 4): a recreate with
// --pause killed while it waits; an operator then edits the consumer.
// recover leaves the edit alone (state other, naming the fields), and the
// consumer keeps the operator's configuration. A forged intent record
// (valid JSON, the right key and creation times) whose configuration to
// create is hostile is reported and skipped: the live consumer keeps its
// configuration. A forged record for a consumer that is missing shows, in
// the plan, the full configuration it would create with the hostile
// fields called out, before anything is created.
func TestRecoverComparesBeforeActing(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	e := newEnv(t, natsproc.Options{})
	cfg := jetstream.ConsumerConfig{Durable: "p1", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 10 * time.Minute}
	cons, err := e.js.CreateConsumer(e.ctx(), "ORDERS", cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cons.Fetch(5, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for range b.Messages() {
	}
	cmd := e.command("consumer", "reset", "ORDERS", "p1", "--to-seq", "100", "--method", "recreate", "--pause", "--drain-timeout", "10m", "--execute")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testserver.WaitFor(t, time.Minute, "the change to pause p1", func() bool {
		ci, err := cons.Info(e.ctx())
		return err == nil && ci.Paused
	})
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if e.unfinished() != 1 {
		t.Fatalf("the killed change left %d intent records, want 1:\n%s", e.unfinished(), out.String())
	}
	edited := cfg
	edited.FilterSubject, edited.MaxAckPending, edited.Description = "orders.eu", 77, "edited by ops"
	ci := consumerInfo(t, e, "p1")
	edited.PauseUntil = ci.Config.PauseUntil
	if _, err := e.js.UpdateConsumer(e.ctx(), "ORDERS", edited); err != nil {
		t.Fatal(err)
	}
	want := e.configs([]string{"p1"})
	code, stdout, stderr := e.run("consumer", "recover", "ORDERS", "p1")
	if code != 0 || !strings.Contains(stdout, "its configuration was changed by someone else since the change started (description, filter_subject, max_ack_pending): left as it is") ||
		!strings.Contains(stdout, " other ") {
		t.Fatalf("recover plan exited %d:\n%s\n%s", code, stdout, stderr)
	}
	if code, stdout, stderr := e.run("consumer", "recover", "ORDERS", "p1", "--execute"); code != 0 {
		t.Fatalf("recover exited %d:\n%s\n%s", code, stdout, stderr)
	}
	got := e.configs([]string{"p1"})
	delete(got["p1"].(map[string]any), "pause_until")
	delete(want["p1"].(map[string]any), "pause_until")
	if b1, b2 := mustJSON(want), mustJSON(got); b1 != b2 {
		t.Fatalf("recover changed the edited consumer:\nbefore %s\nafter  %s", b1, b2)
	}
	if e.unfinished() != 0 {
		t.Fatal("recover left the intent record")
	}

	// A forged intent for a live consumer: right key and creation times,
	// its configuration as it is, and a hostile one to create.
	if _, err := e.js.CreateConsumer(e.ctx(), "ORDERS", jetstream.ConsumerConfig{Durable: "p2", AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: "orders.eu"}); err != nil {
		t.Fatal(err)
	}
	before := e.configs([]string{"p2"})
	hostile := func(c map[string]any) {
		c["ack_policy"], c["filter_subject"], c["max_deliver"] = "none", "ed.zzz", 1
	}
	e.forgeIntent("p2", hostile, false)
	code, stdout, stderr = e.run("consumer", "recover", "ORDERS", "--execute")
	if code != 0 || !strings.Contains(stderr, `jsctl: warning: skipped record "ORDERS.p2" in bucket JSCTL_RESET_INTENTS`) ||
		!strings.Contains(stderr, "configuration to create differs from the consumer's recorded one in more than its start (ack_policy, filter_subject, max_deliver)") {
		t.Fatalf("recover of the forged record exited %d:\n%s\n%s", code, stdout, stderr)
	}
	if after := e.configs([]string{"p2"}); mustJSON(after) != mustJSON(before) {
		t.Fatalf("the forged record changed p2:\nbefore %s\nafter  %s", mustJSON(before), mustJSON(after))
	}
	kv, err := e.js.KeyValue(e.ctx(), reset.IntentBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(e.ctx(), reset.HistoryKey("ORDERS", "p2")); err != nil {
		t.Fatal(err)
	}

	// Both configurations hostile: p2's own is not what the record says.
	e.forgeIntent("p2", hostile, true)
	code, stdout, stderr = e.run("consumer", "recover", "ORDERS", "p2", "--execute")
	if code != 0 || !strings.Contains(stdout, "its configuration was changed by someone else since the change started (ack_policy, filter_subject, max_deliver): left as it is") {
		t.Fatalf("recover of the forged record exited %d:\n%s\n%s", code, stdout, stderr)
	}
	if after := e.configs([]string{"p2"}); mustJSON(after) != mustJSON(before) {
		t.Fatalf("the forged record changed p2:\nbefore %s\nafter  %s", mustJSON(before), mustJSON(after))
	}

	// The consumer missing: the plan shows what --execute would create.
	e.forgeIntent("p2", hostile, true)
	if err := e.js.DeleteConsumer(e.ctx(), "ORDERS", "p2"); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = e.run("consumer", "recover", "ORDERS", "p2")
	for _, line := range []string{
		`  p2: recorded configuration it is created with, against the server's defaults:`,
		`    ack_policy: "explicit" -> "none"  (!)`,
		`    filter_subject: unset -> "ed.zzz"  (!)`,
		`    max_deliver: -1 -> 1  (!)`,
		`  p2: warning: recorded configuration against the server's defaults: ack_policy: "explicit" -> "none": changes whether messages are acknowledged`,
	} {
		if code != 0 || !strings.Contains(stdout, line+"\n") {
			t.Fatalf("recover plan of the missing consumer exited %d, lacks %q:\n%s\n%s", code, line, stdout, stderr)
		}
	}
	if _, err := e.js.Consumer(e.ctx(), "ORDERS", "p2"); err == nil {
		t.Fatal("the plan created p2")
	}
}

// forgeIntent writes an intent record for consumer name as a forger with
// write access to the bucket would: the right key, the consumer's and the
// stream's creation times, its configuration as the server holds it, and
// a configuration to create that hostile changes (both, with both).
func (e *env) forgeIntent(name string, hostile func(map[string]any), both bool) {
	e.t.Helper()
	msg, err := e.nc.Request("$JS.API.CONSUMER.INFO.ORDERS."+name, nil, 10*time.Second)
	if err != nil {
		e.t.Fatal(err)
	}
	var raw struct {
		Config  map[string]any `json:"config"`
		Created time.Time      `json:"created"`
	}
	if err := json.Unmarshal(msg.Data, &raw); err != nil {
		e.t.Fatal(err)
	}
	s, err := e.js.Stream(e.ctx(), "ORDERS")
	if err != nil {
		e.t.Fatal(err)
	}
	cur, _ := json.Marshal(raw.Config)
	hostile(raw.Config)
	raw.Config["deliver_policy"], raw.Config["opt_start_seq"] = "by_start_sequence", 1
	bad, _ := json.Marshal(raw.Config)
	if both {
		cur = bad
	}
	created, streamCreated := raw.Created.UTC(), s.CachedInfo().Created.UTC()
	in := reset.Intent{
		ID: "f0f0f0", Stream: "ORDERS", Consumer: name, Method: reset.Recreate,
		Target: reset.Target{Kind: reset.ToSeq, Seq: 1}, Config: cur, NewConfig: bad,
		Created: &created, StreamCreated: &streamCreated,
		To: reset.To{Sequence: 1}, Time: time.Now().UTC(), User: "ops", Host: "box",
	}
	val, err := json.Marshal(in)
	if err != nil {
		e.t.Fatal(err)
	}
	kv, err := e.js.KeyValue(e.ctx(), reset.IntentBucket)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := kv.Put(e.ctx(), reset.HistoryKey("ORDERS", name), val); err != nil {
		e.t.Fatal(err)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestRecordsNamedOtherwise (issue 26, finding 8): an unreadable history
// record is reported by consumer history (stderr, exit 0) and the others
// are listed; a snapshot stored under key "nightly" whose document names
// itself "pre-deploy" is listed, shown and restored as "nightly", with a
// warning, and the real "pre-deploy" is listed once.
func TestRecordsNamedOtherwise(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	e := newEnv(t, natsproc.Options{})
	if _, err := e.js.CreateConsumer(e.ctx(), "ORDERS", jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	fetchAck(t, e, "c", 5)
	if code, out, errs := e.run("consumer", "reset", "ORDERS", "c", "--to-seq", "2", "--execute"); code != 0 {
		t.Fatalf("reset exited %d:\n%s\n%s", code, out, errs)
	}
	kv, err := e.js.KeyValue(e.ctx(), reset.HistoryBucket)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := kv.Put(e.ctx(), reset.HistoryKey("ORDERS", "c"), []byte("garbage{{"))
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := e.run("consumer", "history", "ORDERS", "c")
	if code != 0 || !strings.Contains(errs, fmt.Sprintf(`jsctl: warning: skipped record "ORDERS.c" in bucket JSCTL_RESET_HISTORY (revision %d): not a history record:`, rev)) ||
		!strings.Contains(out, "sequence 2") {
		t.Fatalf("consumer history exited %d:\n%s\n%s", code, out, errs)
	}
	code, out, errs = e.run("consumer", "history", "ORDERS", "c", "--json")
	if code != 0 || !strings.HasPrefix(out, "[") || !strings.Contains(errs, "skipped record") {
		t.Fatalf("consumer history --json exited %d:\n%s\n%s", code, out, errs)
	}

	if code, out, errs := e.run("consumer", "snapshot", "save", "pre-deploy", "ORDERS", "c"); code != 0 {
		t.Fatalf("snapshot save exited %d:\n%s\n%s", code, out, errs)
	}
	skv, err := e.js.KeyValue(e.ctx(), "JSCTL_SNAPSHOTS")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := skv.Get(e.ctx(), "pre-deploy")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := skv.Put(e.ctx(), "nightly", doc.Value()); err != nil {
		t.Fatal(err)
	}
	warning := `jsctl: warning: snapshot "nightly" in bucket JSCTL_SNAPSHOTS names itself "pre-deploy": it is listed, shown and restored as "nightly", its key`
	code, out, errs = e.run("consumer", "snapshot", "ls", "--json")
	var list []struct {
		Name    string `json:"name"`
		NamedAs string `json:"document_name"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || !strings.Contains(errs, warning) {
		t.Fatalf("snapshot ls exited %d:\n%s\n%s", code, out, errs)
	}
	names := map[string]string{}
	for _, s := range list {
		if _, twice := names[s.Name]; twice {
			t.Fatalf("snapshot %q listed twice: %s", s.Name, out)
		}
		names[s.Name] = s.NamedAs
	}
	if len(names) != 2 || names["nightly"] != "pre-deploy" || names["pre-deploy"] != "" {
		t.Fatalf("snapshot ls listed %v", names)
	}
	if code, out, errs := e.run("consumer", "snapshot", "show", "nightly"); code != 0 || !strings.HasPrefix(out, "Snapshot nightly, taken ") || !strings.Contains(errs, warning) {
		t.Fatalf("snapshot show exited %d:\n%s\n%s", code, out, errs)
	}
	code, out, errs = e.run("consumer", "snapshot", "restore", "nightly", "--execute")
	if code != 0 || !strings.Contains(out, "restore snapshot nightly (taken ") || !strings.Contains(errs, warning) {
		t.Fatalf("snapshot restore exited %d:\n%s\n%s", code, out, errs)
	}
	if ci := consumerInfo(t, e, "c"); ci.AckFloor.Stream != 1 {
		t.Fatalf("restored to ack floor %d, want the saved 1", ci.AckFloor.Stream)
	}
}
