package reset

import (
	"strconv"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestResetAtomicBatch (issue 17): an atomic batch (allow_atomic,
// nats-server 2.12+) stores all its messages with one timestamp, to the
// nanosecond, in clustered mode (nats-server 2.15.2 stream.go takes one
// time.Now for the whole batch there; a server outside a cluster stores
// each message with its own time). A target time equal to it lands on the
// batch's first message (after, nearest) or its last (before), in place
// and by a recreate started by time.
func TestResetAtomicBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	cl := testserver.StartCluster(t, 3)
	js := cl.JetStream()
	if _, err := testserver.CreateStream(testCtx(t), js, jetstream.StreamConfig{Name: "B", Subjects: []string{"b.>"}, AllowAtomicPublish: true, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	cl.WaitForStreamLeader("B")
	publish(t, js, "b.x", 3, 0)
	nc := js.Conn()
	for i := 1; i <= 3; i++ {
		m := nats.NewMsg("b.x")
		m.Header.Set("Nats-Batch-Id", "batch1")
		m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(i))
		if i < 3 {
			if err := nc.PublishMsg(m); err != nil {
				t.Fatal(err)
			}
			continue
		}
		m.Header.Set("Nats-Batch-Commit", "1")
		r, err := nc.RequestMsg(m, 10*time.Second)
		if err != nil || len(r.Data) == 0 || r.Header.Get("Status") != "" {
			t.Fatalf("commit: %v", err)
		}
		t.Logf("commit: %s", r.Data)
	}
	publish(t, js, "b.x", 2, 0)
	s, err := js.Stream(testCtx(t), "B")
	if err != nil {
		t.Fatal(err)
	}
	var ts []time.Time
	for seq := uint64(1); seq <= 8; seq++ {
		m, err := s.GetMsg(testCtx(t), seq)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, m.Time)
	}
	if !ts[3].Equal(ts[4]) || !ts[4].Equal(ts[5]) || !ts[2].Before(ts[3]) || !ts[5].Before(ts[6]) {
		t.Fatalf("timestamps %v: want 4 to 6 equal, 3 and 7 apart", ts)
	}
	addConsumer(t, js, "B", jetstream.ConsumerConfig{Durable: "c"})
	addConsumer(t, js, "B", jetstream.ConsumerConfig{Durable: "r", DeliverPolicy: jetstream.DeliverAllPolicy})
	fetch(t, js, "B", "c", 8)
	fetch(t, js, "B", "r", 8)
	for mode, want := range map[string]uint64{ModeAfter: 4, ModeNearest: 4, ModeBefore: 6} {
		p := mustPlan(t, js, "B", []string{"c"}, Target{Kind: ToTime, Time: ts[4], Mode: mode}, Options{})
		if got := p.Changes[0].To.Sequence; got != want {
			t.Errorf("--mode %s at the batch's time: sequence %d, want %d", mode, got, want)
		}
	}
	mustRun(t, js, "B", []string{"c"}, Target{Kind: ToTime, Time: ts[4]}, Options{Method: Reset})
	p := mustRun(t, js, "B", []string{"r"}, Target{Kind: ToTime, Time: ts[4]}, Options{Method: Recreate})
	if c := p.Changes[0]; c.StartTime == nil || !c.Verified {
		t.Fatalf("recreate: start time %v, verified %v", c.StartTime, c.Verified)
	}
	for _, name := range []string{"c", "r"} {
		if got := fetch(t, js, "B", name, 3); len(got) != 3 || got[0] != 4 || got[2] != 6 {
			t.Fatalf("%s: next deliveries %v, want 4 5 6", name, got)
		}
	}
}

// TestResetPausedConsumer (issue 17): a consumer paused by someone else,
// changed without --pause, in place and by a recreate: it is moved and
// stays paused until the same time (the recreate sends back its
// pause_until), and delivers the target first once resumed.
func TestResetPausedConsumer(t *testing.T) {
	js := single(t)
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 1)
	publish(t, js, "orders.eu", 10, 0)
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	for _, name := range []string{"inplace", "recreated"} {
		addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: name})
		fetch(t, js, "ORDERS", name, 8)
		if _, err := js.PauseConsumer(testCtx(t), "ORDERS", name, until); err != nil {
			t.Fatal(err)
		}
	}
	mustRun(t, js, "ORDERS", []string{"inplace"}, Target{Kind: ToSeq, Seq: 3}, Options{Method: Reset})
	mustRun(t, js, "ORDERS", []string{"recreated"}, Target{Kind: ToSeq, Seq: 3}, Options{Method: Recreate})
	for _, name := range []string{"inplace", "recreated"} {
		i := info(t, js, "ORDERS", name)
		if !i.Paused || i.Config.PauseUntil == nil || !i.Config.PauseUntil.Equal(until) {
			t.Fatalf("%s: paused %v until %v, want until %v", name, i.Paused, i.Config.PauseUntil, until)
		}
		if _, err := js.ResumeConsumer(testCtx(t), "ORDERS", name); err != nil {
			t.Fatal(err)
		}
		if got := fetch(t, js, "ORDERS", name, 1); len(got) != 1 || got[0] != 3 {
			t.Fatalf("%s: next delivery %v, want 3", name, got)
		}
	}
}
