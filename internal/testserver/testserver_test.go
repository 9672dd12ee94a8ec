package testserver

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestClusterR3(t *testing.T) {
	c := StartCluster(t, 3)
	nc := Connect(t, c.Servers[0])
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := CreateStream(ctx, js, jetstream.StreamConfig{Name: "R3", Subjects: []string{"r3.>"}, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	c.WaitForStreamLeader("R3")
	// The stream's interest may not have reached this node yet: Publish
	// asks again while it answers "no responders".
	if _, err := Publish(ctx, js, &nats.Msg{Subject: "r3.a", Data: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("want 2 replicas besides the leader, got %+v", info.Cluster)
	}
	if info.State.Msgs != 1 {
		t.Fatalf("want 1 message, got %d", info.State.Msgs)
	}
}
