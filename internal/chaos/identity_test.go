package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go/jetstream"
)

// TestRecoverLeavesSomeoneElsesConsumer: a recreate with --pause is killed
// while it waits for the paused consumer's deliveries; someone then
// deletes the consumer and adds it again with the same configuration and
// consumes 3 messages. recover must leave their consumer alone (it is not
// the one the change found, nor one it created) and say so.
func TestRecoverLeavesSomeoneElsesConsumer(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	e := newEnv(t, natsproc.Options{})
	cfg := jetstream.ConsumerConfig{Durable: "p1", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 10 * time.Minute}
	cons, err := e.js.CreateConsumer(e.ctx(), "ORDERS", cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Five deliveries left unacknowledged: the paused change waits for them.
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
	// Someone else recreates it with the same configuration and reads 3.
	if err := e.js.DeleteConsumer(e.ctx(), "ORDERS", "p1"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.js.CreateConsumer(e.ctx(), "ORDERS", cfg); err != nil {
		t.Fatal(err)
	}
	fetchAck(t, e, "p1", 3)
	theirs := consumerInfo(t, e, "p1")

	code, stdout, stderr := e.run("consumer", "recover", "ORDERS", "p1", "--execute", "--json")
	if code != 0 {
		t.Fatalf("recover exited %d:\n%s\n%s", code, stdout, stderr)
	}
	var r struct {
		Changes []struct {
			State, Action, Reason string
			Done                  bool
		}
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	if len(r.Changes) != 1 {
		t.Fatalf("recover lists %d changes, want 1:\n%s", len(r.Changes), stdout)
	}
	rc := r.Changes[0]
	wantReason := "deleted and created again by someone else since the change started (created " + theirs.Created.UTC().Format(time.RFC3339Nano)
	if rc.State != "other" || rc.Action != "leave" || !rc.Done || !strings.HasPrefix(rc.Reason, wantReason) || !strings.HasSuffix(rc.Reason, "): left as it is") {
		t.Fatalf("recover: state %q, action %q, done %v, reason %q; want other, leave, done, %q...", rc.State, rc.Action, rc.Done, rc.Reason, wantReason)
	}
	now := consumerInfo(t, e, "p1")
	if !now.Created.Equal(theirs.Created) || now.Delivered.Stream != 3 || now.AckFloor.Stream != 3 || now.Paused {
		t.Fatalf("their consumer: created %s (theirs %s), delivered %d, ack floor %d, paused %v; want it untouched at 3 and 3",
			now.Created, theirs.Created, now.Delivered.Stream, now.AckFloor.Stream, now.Paused)
	}
	if n := e.unfinished(); n != 0 {
		t.Fatalf("%d intent records left, want 0", n)
	}
}

// TestRestoreRefusesRecreatedStream: a snapshot (ack floor 5) and a plan
// file are made; the stream is deleted, created again and given 10 new
// messages. Restoring the snapshot and executing the plan file are refused
// (exit 5) naming both creation times, and nothing changes; restore
// --by-time restores the position by its saved time: every new message is
// after it, so the consumer delivers all 10.
func TestRestoreRefusesRecreatedStream(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	e := newEnv(t, natsproc.Options{})
	cfg := jetstream.ConsumerConfig{Durable: "c1", AckPolicy: jetstream.AckExplicitPolicy}
	fresh := jetstream.ConsumerConfig{Durable: "c2", AckPolicy: jetstream.AckExplicitPolicy}
	for _, c := range []jetstream.ConsumerConfig{cfg, fresh} {
		if _, err := e.js.CreateConsumer(e.ctx(), "ORDERS", c); err != nil {
			t.Fatal(err)
		}
	}
	fetchAck(t, e, "c1", 5)
	if code, out, errs := e.run("consumer", "snapshot", "save", "s1", "ORDERS", "c1"); code != 0 {
		t.Fatalf("snapshot save exited %d:\n%s\n%s", code, out, errs)
	}
	plan := filepath.Join(t.TempDir(), "plan.json")
	if code, out, errs := e.run("consumer", "reset", "ORDERS", "c2", "--to-seq", "6", "--export", plan); code != 0 {
		t.Fatalf("reset --export exited %d:\n%s\n%s", code, out, errs)
	}
	old, err := e.js.Stream(e.ctx(), "ORDERS")
	if err != nil {
		t.Fatal(err)
	}
	then := old.CachedInfo().Created.UTC().Format(time.RFC3339Nano)
	if err := e.js.DeleteStream(e.ctx(), "ORDERS"); err != nil {
		t.Fatal(err)
	}
	s, err := e.js.CreateStream(e.ctx(), jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	if err != nil {
		t.Fatal(err)
	}
	now := s.CachedInfo().Created.UTC().Format(time.RFC3339Nano)
	for i := 0; i < 10; i++ {
		if _, err := e.js.Publish(e.ctx(), "orders.eu", fmt.Appendf(nil, "new %d", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.js.CreateConsumer(e.ctx(), "ORDERS", fresh); err != nil {
		t.Fatal(err)
	}

	code, out, errs := e.run("consumer", "snapshot", "restore", "s1", "--execute")
	want := fmt.Sprintf("stream \"ORDERS\" was deleted and created again since the position was saved (created %s then, %s now)", then, now)
	if code != 5 || !strings.Contains(errs, want) || !strings.Contains(errs, "pass --by-time") {
		t.Fatalf("restore exited %d, want 5 with %q:\n%s\n%s", code, want, out, errs)
	}
	if _, err := e.js.Consumer(e.ctx(), "ORDERS", "c1"); err == nil {
		t.Fatal("the refused restore created c1")
	}
	code, out, errs = e.run("consumer", "reset", "--from-file", plan, "--execute")
	want = fmt.Sprintf("stream \"ORDERS\" was deleted and created again since the plan was made (created %s then, %s now)", then, now)
	if code != 5 || !strings.Contains(errs, want) {
		t.Fatalf("reset --from-file exited %d, want 5 with %q:\n%s\n%s", code, want, out, errs)
	}
	if ci := consumerInfo(t, e, "c2"); ci.Delivered.Stream != 0 || ci.AckFloor.Stream != 0 || ci.NumPending != 10 {
		t.Fatalf("the refused plan moved c2: delivered %d, ack floor %d, pending %d", ci.Delivered.Stream, ci.AckFloor.Stream, ci.NumPending)
	}

	code, out, errs = e.run("consumer", "snapshot", "restore", "s1", "--by-time", "--execute", "--json")
	if code != 0 {
		t.Fatalf("restore --by-time exited %d:\n%s\n%s", code, out, errs)
	}
	var doc struct {
		Changes []struct {
			Method string
			ByTime bool `json:"by_time"`
			To     struct{ Sequence uint64 }
			Reason string
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(doc.Changes) != 1 || !doc.Changes[0].ByTime || doc.Changes[0].To.Sequence != 1 || doc.Changes[0].Method != "create" || !strings.HasPrefix(doc.Changes[0].Reason, "by time: ") {
		t.Fatalf("restore --by-time planned %+v; want one create by time to sequence 1", doc.Changes)
	}
	if ci := consumerInfo(t, e, "c1"); ci.AckFloor.Stream != 0 || ci.NumPending != 10 {
		t.Fatalf("restored c1: ack floor %d, pending %d; want 0 and all 10 new messages", ci.AckFloor.Stream, ci.NumPending)
	}
}
