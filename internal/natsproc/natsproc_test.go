//go:build unix

package natsproc_test

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func connect(t *testing.T, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// TestKillRestart: a killed server process is gone (by its PID); restarted,
// it is back on the same port with what it had stored.
func TestKillRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs nats-server")
	}
	s := natsproc.Start(t, natsproc.Options{JetStream: "sync_interval: always"})
	_, js := connect(t, s.URL())
	ctx := testserver.Context(t, 30*time.Second)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if _, err := js.Publish(ctx, "orders.eu", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	pid := s.PID()
	s.Kill()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("process %d still there after Kill: %v", pid, err)
	}
	if s.Running() {
		t.Fatal("Running after Kill")
	}
	s.Restart()
	if s.PID() == pid || s.PID() == 0 {
		t.Fatalf("restart: pid %d (was %d)", s.PID(), pid)
	}
	var n uint64
	testserver.WaitFor(t, 20*time.Second, "the stream back with its 10 messages", func() bool {
		st, err := js.Stream(ctx, "ORDERS")
		if err != nil {
			return false
		}
		n = st.CachedInfo().State.Msgs
		return n == 10
	})
	if b, err := os.ReadFile(s.ConfigFile); err != nil || len(b) == 0 {
		t.Fatalf("config file: %v", err)
	}
}

// TestClusterLeaders finds the meta, stream and consumer leaders of a
// 3-process cluster, kills the stream's leader, sees another node take
// over, and restarts the killed one.
func TestClusterLeaders(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-process cluster")
	}
	c := natsproc.StartCluster(t, 3, natsproc.Options{})
	nc, js := connect(t, c.URLs())
	ctx := testserver.Context(t, time.Minute)
	meta, err := c.Leader(nc, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testserver.CreateStream(ctx, js, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "c", Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	var old *natsproc.Server
	testserver.WaitFor(t, 20*time.Second, "a stream leader", func() bool {
		old, err = c.Leader(nc, "ORDERS", "")
		return err == nil
	})
	if _, err := c.Leader(nc, "ORDERS", "c"); err != nil {
		t.Fatal(err)
	}
	killed, err := c.KillLeader(nc, "ORDERS", "", 10*time.Second)
	if err != nil || killed != old {
		t.Fatalf("killed %v (%v), want %s", killed, err, old.Name)
	}
	testserver.WaitFor(t, 30*time.Second, "a new stream leader", func() bool {
		s, err := c.Leader(nc, "ORDERS", "")
		return err == nil && s != old
	})
	killed.Restart()
	if err := c.WaitHealthy(time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Logf("meta leader %s; stream leader %s killed and restarted", meta.Name, old.Name)
}

// TestBinaryCached: the binary is built once and reused.
func TestBinaryCached(t *testing.T) {
	if testing.Short() {
		t.Skip("builds nats-server")
	}
	a := natsproc.Binary(t)
	b := natsproc.Binary(t)
	if a != b {
		t.Fatalf("%s != %s", a, b)
	}
	if _, err := os.Stat(a); err != nil {
		t.Fatal(err)
	}
}
