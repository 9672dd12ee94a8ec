package reset

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go/jetstream"
)

// TestClusterR3 resets a replicated (R3) consumer of an R3 stream in place
// and by recreate on a 3-node cluster, stepping the consumer leader down
// in the middle of each.
func TestClusterR3(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testserver.StartCluster(t, 3)
	js := c.JetStream()
	nc := js.Conn()
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 3)
	c.WaitForStreamLeader("ORDERS")
	publish(t, js, "orders.eu", 20, 0)
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "billing", Description: "r3", MaxDeliver: 5})
	waitLeaderOf(t, js, "ORDERS", "billing")
	fetch(t, js, "ORDERS", "billing", 15)
	before := configWithoutStart(t, js, "ORDERS", "billing")

	stepped := 0
	stepDown := func() {
		old := waitLeaderOf(t, js, "ORDERS", "billing")
		resp, err := nc.Request(fmt.Sprintf("$JS.API.CONSUMER.LEADER.STEPDOWN.%s.%s", "ORDERS", "billing"), nil, 5*time.Second)
		if err != nil {
			t.Fatalf("step down: %v", err)
		}
		var r struct {
			Success bool `json:"success"`
		}
		_ = json.Unmarshal(resp.Data, &r)
		if !r.Success {
			t.Fatalf("step down refused: %s", resp.Data)
		}
		stepped++
		t.Logf("consumer leader %s stepped down", old)
	}

	// In place, the leader stepping down just before the reset request.
	opts := Options{Timeout: 2 * time.Second, inPlace: func(ctx context.Context, js jetstream.JetStream, stream, consumer string, seq uint64) (*resetReply, error) {
		if stepped == 0 {
			stepDown()
		}
		return resetConsumer(ctx, js, stream, consumer, seq)
	}}
	p := mustRun(t, js, "ORDERS", []string{"billing"}, Target{Kind: ToSeq, Seq: 5}, opts)
	if p.Changes[0].Method != Reset {
		t.Fatalf("method %s (%s), want reset", p.Changes[0].Method, p.Changes[0].Reason)
	}
	if got := fetch(t, js, "ORDERS", "billing", 1); len(got) != 1 || got[0] != 5 {
		t.Fatalf("after in-place reset: %v", got)
	}

	// A plan made before a leader change still applies.
	p = mustPlan(t, js, "ORDERS", []string{"billing"}, Target{Kind: ToSeq, Seq: 3}, Options{Method: Recreate})
	stepDown()
	if err := Execute(testCtx(t), js, p, Options{Method: Recreate}); err != nil {
		t.Fatal(err)
	}
	if !p.Changes[0].Verified {
		t.Fatalf("not verified: %v", p.Changes[0].Warnings)
	}
	if got := fetch(t, js, "ORDERS", "billing", 1); len(got) != 1 || got[0] != 3 {
		t.Fatalf("after recreate: %v", got)
	}
	sameConfig(t, before, configWithoutStart(t, js, "ORDERS", "billing"))
	waitLeaderOf(t, js, "ORDERS", "billing") // the recreated consumer has a leader and two replicas

	// By recreate again, the stream leader stepping down between the
	// delete and the create.
	opts = Options{Method: Recreate, beforeCreate: func() error {
		resp, err := nc.Request("$JS.API.STREAM.LEADER.STEPDOWN.ORDERS", nil, 5*time.Second)
		if err != nil {
			return err
		}
		t.Logf("stream leader stepped down: %s", resp.Data)
		return nil
	}}
	p = mustRun(t, js, "ORDERS", []string{"billing"}, Target{Kind: ToSeq, Seq: 4}, opts)
	if p.Changes[0].Restored {
		t.Fatal("restored instead of recreated")
	}
	if got := fetch(t, js, "ORDERS", "billing", 1); len(got) != 1 || got[0] != 4 {
		t.Fatalf("after recreate across a stream leader change: %v", got)
	}
	sameConfig(t, before, configWithoutStart(t, js, "ORDERS", "billing"))

	// Undo from the replicated history bucket, the leader moving again.
	stepDown()
	mustRun(t, js, "ORDERS", []string{"billing"}, Target{Kind: ToPrevious}, Options{})
	// (back to where the last reset found it: ack floor 3, next 4)
	if got := fetch(t, js, "ORDERS", "billing", 1); len(got) != 1 || got[0] != 4 {
		t.Fatalf("after undo: %v", got)
	}
	kv, err := js.KeyValue(testCtx(t), HistoryBucket)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := kv.Status(testCtx(t))
	if st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Replicas != 3 {
		t.Fatal("history bucket is not R3")
	}
}

// waitLeaderOf polls until the consumer has a leader and returns it.
func waitLeaderOf(t testing.TB, js jetstream.JetStream, stream, name string) string {
	t.Helper()
	var leader string
	testserver.WaitFor(t, 30*time.Second, fmt.Sprintf("a leader of consumer %q with two replicas", name), func() bool {
		st, err := loadConsumer(testCtx(t), js, stream, name)
		if err != nil || st.info.Cluster == nil {
			return false
		}
		leader = st.info.Cluster.Leader
		return leader != "" && len(st.info.Cluster.Replicas) == 2
	})
	return leader
}

// TestClusterR3Pause: --pause on a replicated consumer of an R3 stream
// that a live client reads from, in place and by recreate. The pause API
// answers before the cluster applies it, so the change waits for the
// consumer leader to report it paused; the consumer ends resumed, with its
// configuration, and the client's next message is the target.
func TestClusterR3Pause(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testserver.StartCluster(t, 3)
	js := c.JetStream()
	addStream(t, js, "ORDERS", jetstream.LimitsPolicy, 3)
	publish(t, js, "orders.eu", 100, 0)
	addConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "live", Description: "r3", MaxAckPending: 5})
	waitLeaderOf(t, js, "ORDERS", "live")
	before := configWithoutStart(t, js, "ORDERS", "live")
	for i, method := range []Method{Reset, Recreate} {
		pl := startPuller(t, js, "ORDERS", "live", 2*time.Millisecond)
		testserver.WaitFor(t, 10*time.Second, "the puller to be busy", func() bool { return pl.count() >= 10 })
		var atReset int
		opts := Options{Method: method, Pause: true, DrainTimeout: 10 * time.Second,
			crash: func(step string) bool {
				if step == "paused" {
					atReset = pl.count()
				}
				return false
			}}
		target := uint64(3 + i)
		p := mustRun(t, js, "ORDERS", []string{"live"}, Target{Kind: ToSeq, Seq: target}, opts)
		if c := p.Changes[0]; !c.Pause.Resumed {
			t.Fatalf("%s: not resumed: %+v", method, c.Pause)
		}
		if method == Reset {
			testserver.WaitFor(t, 5*time.Second, "the client's next message", func() bool { return pl.count() > atReset })
			if got := pl.at(atReset); got != target {
				t.Fatalf("%s: the client's next message %d, want %d", method, got, target)
			}
		}
		waitLeaderOf(t, js, "ORDERS", "live") // a leader and two replicas
		if i := info(t, js, "ORDERS", "live"); i.Paused {
			t.Fatalf("%s: paused %v, cluster %+v", method, i.Paused, i.Cluster)
		}
		sameConfig(t, before, configWithoutStart(t, js, "ORDERS", "live"))
	}
}
