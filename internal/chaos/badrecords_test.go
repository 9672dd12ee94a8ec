package chaos

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestBadRecordAndOddNames runs against a real nats-server process (issue
// 17, items 3 and 5): a malformed intent record next to a reset killed
// while it had the consumer paused is reported with its key and skipped,
// and the change is still listed and finished (the consumer resumed);
// consumers whose names hold control characters (the server accepts them)
// are checked, saved and restored, and printed escaped.
func TestBadRecordAndOddNames(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	e := newEnv(t, natsproc.Options{})
	odd := []string{"odd\x01name", "esc\x1b[31m"}
	for _, n := range append([]string{"p1"}, odd...) {
		if _, err := e.js.CreateConsumer(e.ctx(), "ORDERS", jetstream.ConsumerConfig{Durable: n, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Fatalf("create consumer %q: %v", n, err)
		}
	}
	e.killedPausedReset("p1", 2)
	kv, err := e.js.KeyValue(e.ctx(), reset.IntentBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.PutString(e.ctx(), "ORDERS.junk", `{"id":`); err != nil {
		t.Fatal(err)
	}

	skipped := `jsctl: warning: skipped record "ORDERS.junk" in bucket JSCTL_RESET_INTENTS (revision 2): not an intent record: unexpected end of JSON input; it was left alone (remove it with: nats kv del JSCTL_RESET_INTENTS ORDERS.junk)` + "\n"
	code, out, stderr := e.run("consumer", "ls", "ORDERS")
	if code != 0 || !strings.HasPrefix(stderr, skipped) ||
		!strings.Contains(stderr, `jsctl: warning: consumer "p1" on "ORDERS" has an unfinished reset (change c0ffee`) {
		t.Fatalf("consumer ls: exit %d, stderr:\n%s\nwant 0, the skipped record, then p1's unfinished change", code, stderr)
	}
	for _, n := range []string{`odd\u0001name`, `esc\u001b[31m`} {
		if !strings.Contains(out, " "+n+" ") {
			t.Errorf("consumer ls does not list %s escaped:\n%s", n, out)
		}
	}
	code, out, stderr = e.run("consumer", "recover", "ORDERS", "p1", "--execute")
	if code != 0 || stderr != "" || !strings.Contains(out, " verified") {
		t.Fatalf("consumer recover p1 --execute: exit %d, stderr %q; want 0, verified:\n%s", code, stderr, out)
	}
	if ci := e.info("p1"); ci.Paused || ci.Config.PauseUntil != nil || ci.Delivered.Stream != 1 {
		t.Errorf("p1 after recover: paused %v until %v, delivered %d; want resumed, next delivery 2", ci.Paused, ci.Config.PauseUntil, ci.Delivered.Stream)
	}

	code, out, stderr = e.run("consumer", "check", "ORDERS", "--all", "--format", "prometheus")
	if code != 0 || stderr != "" {
		t.Fatalf("check --format prometheus: exit %d, stderr %q", code, stderr)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(out))
	if err != nil {
		t.Fatalf("prometheus text does not parse: %v\n%s", err, out)
	}
	got := map[string]bool{}
	for _, m := range fams["jsctl_consumer_check_status"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "consumer" {
				got[l.GetValue()] = true
			}
		}
	}
	if len(got) != 3 || !got["p1"] || !got[`odd\u0001name`] || !got[`esc\u001b[31m`] {
		t.Errorf("check_status samples for consumers %v; want p1, odd\\u0001name and esc\\u001b[31m", got)
	}
	code, out, _ = e.run("consumer", "check", "ORDERS", "--all")
	if code != 0 || !strings.HasPrefix(out, "OK: 3 consumers on ORDERS: 3 ok | ") || strings.ContainsAny(out, "\x01\x1b") ||
		!strings.Contains(out, "\nOK: ORDERS/odd\\u0001name: ") {
		t.Errorf("check (Nagios): exit %d, want 0, three consumers, names escaped:\n%q", code, out)
	}

	code, out, stderr = e.run("consumer", "snapshot", "save", "s1", "ORDERS", "--all")
	if code != 0 || !strings.HasPrefix(out, "Saved snapshot s1: 3 consumers on ORDERS.") {
		t.Fatalf("snapshot save --all: exit %d, stderr %q:\n%s", code, stderr, out)
	}
	for _, n := range odd {
		if err := e.js.DeleteConsumer(e.ctx(), "ORDERS", n); err != nil {
			t.Fatal(err)
		}
	}
	code, out, stderr = e.run("consumer", "snapshot", "restore", "s1", "--execute")
	if code != 0 {
		t.Fatalf("snapshot restore --execute: exit %d, stderr %q:\n%s", code, stderr, out)
	}
	for _, n := range odd {
		if _, err := e.js.Consumer(e.ctx(), "ORDERS", n); err != nil {
			t.Errorf("consumer %q not restored: %v\n%s", n, err, out)
		}
	}
}

// killedPausedReset leaves what a `consumer reset --method reset --pause
// --execute` of name to next delivery seq leaves when killed after it
// paused the consumer: its intent record (change c0ffee) and the pause.
func (e *env) killedPausedReset(name string, seq uint64) {
	e.t.Helper()
	msg, err := e.nc.Request("$JS.API.CONSUMER.INFO.ORDERS."+name, nil, 10*time.Second)
	if err != nil {
		e.t.Fatal(err)
	}
	var raw struct {
		Config  json.RawMessage `json:"config"`
		Created time.Time       `json:"created"`
	}
	if err := json.Unmarshal(msg.Data, &raw); err != nil {
		e.t.Fatal(err)
	}
	until := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	created := raw.Created.UTC()
	in := reset.Intent{
		ID: "c0ffee", Stream: "ORDERS", Consumer: name, Method: reset.Reset,
		Target: reset.Target{Kind: reset.ToSeq, Seq: seq}, Config: raw.Config, Created: &created,
		To: reset.To{Sequence: seq}, Time: time.Now().UTC(), User: "ops", Host: "box",
		Pause: &reset.PauseIntent{Until: until, Resume: true},
	}
	val, err := json.Marshal(in)
	if err != nil {
		e.t.Fatal(err)
	}
	kv, err := e.js.CreateKeyValue(e.ctx(), jetstream.KeyValueConfig{Bucket: reset.IntentBucket, History: 1})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := kv.Create(e.ctx(), reset.HistoryKey("ORDERS", name), val); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.js.PauseConsumer(e.ctx(), "ORDERS", name, until); err != nil {
		e.t.Fatal(err)
	}
}
