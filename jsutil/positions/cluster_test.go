package positions

import (
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestClusterR3 saves, compares and checks an R3 consumer of an R3 stream
// on a 3-node cluster: the snapshot bucket gets the stream's three
// replicas, and pause and check work against the replicated consumer.
func TestClusterR3(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testserver.StartCluster(t, 3)
	js := c.JetStream()
	ctx := testserver.Context(t, 60*time.Second)
	if _, err := testserver.CreateStream(ctx, js, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	c.WaitForStreamLeader("ORDERS")
	for i := 0; i < 5; i++ {
		if _, err := testserver.Publish(ctx, js, &nats.Msg{Subject: "orders.eu", Data: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	opts := Options{Timeout: 5 * time.Second}
	if _, err := Save(ctx, js, "r3", "", Selection{Stream: "ORDERS", All: true}, opts); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, Bucket)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Replicas != 3 {
		t.Fatalf("snapshot bucket has %d replicas, want the stream's 3", st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Replicas)
	}
	snap, err := Get(ctx, js, "r3", opts)
	if err != nil {
		t.Fatal(err)
	}
	if cmps, err := Compare(ctx, js, snap, opts); err != nil || len(cmps) != 1 || cmps[0].Deleted || len(cmps[0].ConfigChanges) != 0 {
		t.Fatalf("compare: %+v, %v", cmps, err)
	}
	if _, err := Pause(ctx, js, "ORDERS", "billing", time.Now().Add(time.Hour), opts); err != nil {
		t.Fatal(err)
	}
	rep, err := Check(ctx, js, Selection{Stream: "ORDERS", All: true}, Thresholds{Paused: Critical, Lag: Limit{Warn: new(float64)}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != Critical || len(rep.Results) != 1 || len(rep.Results[0].Problems) != 2 {
		t.Fatalf("check: %+v", rep)
	}
}
