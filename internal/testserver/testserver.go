// Package testserver starts JetStream servers for tests: a single server on a
// random loopback port, or an in-process cluster of several nodes.
package testserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Options tweak a test server.
type Options func(*server.Options)

// New starts a JetStream server on a random loopback port with its store in
// dir, without registering any cleanup. The caller shuts it down.
func New(dir string, opts ...Options) (*server.Server, error) {
	o := &server.Options{
		ServerName: "test",
		Host:       "127.0.0.1",
		Port:       -1,
		JetStream:  true,
		StoreDir:   dir,
		NoLog:      true,
		NoSigs:     true,
	}
	for _, f := range opts {
		f(o)
	}
	s, err := server.NewServer(o)
	if err != nil {
		return nil, err
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return nil, fmt.Errorf("test server did not start")
	}
	return s, nil
}

// Start starts a JetStream server for t with its store in a temporary
// directory, shut down when the test ends.
func Start(t testing.TB, opts ...Options) *server.Server {
	t.Helper()
	s, err := New(t.TempDir(), opts...)
	if err != nil {
		t.Fatalf("start test server: %v", err)
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// Connect opens a client connection to s, closed when the test ends.
func Connect(t testing.TB, s *server.Server, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(s.ClientURL(), opts...)
	if err != nil {
		t.Fatalf("connect to test server: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Cluster is an in-process JetStream cluster.
type Cluster struct {
	Servers []*server.Server
	t       testing.TB
}

// StartCluster starts an in-process JetStream cluster of n nodes on random
// loopback ports, shut down when the test ends. It returns once the cluster
// has a meta leader that counts every node as a peer.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	// The first TempDir registers the directories' removal: it must come
	// before the shutdown's cleanup, so that it runs after it (cleanups run
	// last-registered first). The other way round, the removal races the
	// nodes still writing their stores.
	_ = t.TempDir()
	t.Cleanup(c.Shutdown)
	// Route ports must be known before the nodes start, since every node
	// lists every other as a route (a lone clustered node does not start
	// its route listener). A port the kernel handed out and we released
	// can be taken by someone else before the node binds it: then start
	// again on other ports.
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = c.start(n); err == nil {
			c.WaitForMetaLeader()
			return c
		}
		c.Shutdown()
		c.Servers = nil
	}
	t.Fatalf("start a %d-node cluster: %v", n, err)
	return nil
}

func (c *Cluster) start(n int) error {
	routes := make([]*url.URL, n)
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("find a free port: %w", err)
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		routes[i] = &url.URL{Scheme: "nats-route", Host: fmt.Sprintf("127.0.0.1:%d", ports[i])}
	}
	for i := 0; i < n; i++ {
		o := &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1),
			Host:       "127.0.0.1",
			Port:       -1,
			JetStream:  true,
			StoreDir:   c.t.TempDir(),
			NoLog:      true,
			NoSigs:     true,
			Routes:     routes,
		}
		o.Cluster.Name = "jsctl-test"
		o.Cluster.Host = "127.0.0.1"
		o.Cluster.Port = ports[i]
		s, err := server.NewServer(o)
		if err != nil {
			return fmt.Errorf("node %d: %w", i+1, err)
		}
		go s.Start()
		c.Servers = append(c.Servers, s)
	}
	for i, s := range c.Servers {
		if !s.ReadyForConnections(20 * time.Second) {
			return fmt.Errorf("node %d did not start", i+1)
		}
	}
	return nil
}

// WaitForMetaLeader waits (polling, bounded) until some node is the
// JetStream meta leader, it counts every node as an online JetStream peer,
// and all nodes see each other.
func (c *Cluster) WaitForMetaLeader() {
	c.t.Helper()
	WaitFor(c.t, 30*time.Second, "a meta leader that counts every node", func() bool {
		// The meta leader must see every node online with JetStream and
		// its statistics in: before that, placing an R3 asset fails with
		// "no suitable peers for placement".
		ok := false
		for _, s := range c.Servers {
			if s.JetStreamIsLeader() && len(s.JetStreamClusterPeers()) == len(c.Servers) {
				ok = true
			}
		}
		for _, s := range c.Servers {
			if s.NumRoutes() < len(c.Servers)-1 || !s.JetStreamIsCurrent() {
				ok = false
			}
		}
		return ok
	})
}

// URLs returns a comma-separated list of the nodes' client URLs.
func (c *Cluster) URLs() string {
	u := ""
	for i, s := range c.Servers {
		if i > 0 {
			u += ","
		}
		u += s.ClientURL()
	}
	return u
}

// Shutdown stops every node.
func (c *Cluster) Shutdown() {
	for _, s := range c.Servers {
		s.Shutdown()
	}
	for _, s := range c.Servers {
		s.WaitForShutdown()
	}
}

// WaitForStreamLeader waits (polling, bounded) until a node leads stream
// (in the global account) and every replica of it is current. A stream
// just created in a cluster answers no publish until then.
func (c *Cluster) WaitForStreamLeader(stream string) {
	c.t.Helper()
	WaitFor(c.t, 30*time.Second, fmt.Sprintf("a leader of stream %q with every replica current", stream), func() bool {
		leader, current := false, 0
		for _, s := range c.Servers {
			if s.JetStreamIsStreamLeader("$G", stream) {
				leader = true
			}
			if s.JetStreamIsStreamCurrent("$G", stream) {
				current++
			}
		}
		return leader && current == len(c.Servers)
	})
}

// MinWait is the least WaitFor waits before it fails a test. The bound only
// decides how long a broken test takes to fail, never whether a working one
// passes: under the race detector, with four packages at a time on two
// cores, a puller that takes well under a second on its own needed over
// 10 s (TestForcedResetWithLivePuller failed so in a clean-clone run).
const MinWait = time.Minute

// WaitFor polls cond every 10ms until it holds, and fails the test when it
// does not within d (a minute at least, MinWait); what names the condition
// in the failure.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	d = max(d, MinWait)
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// JetStream starts a server for t (as Start does) and returns a JetStream
// handle on a connection to it.
func JetStream(t testing.TB) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(Connect(t, Start(t)))
	if err != nil {
		t.Fatalf("open jetstream: %v", err)
	}
	return js
}

// JetStream returns a JetStream handle on a connection to every node of
// the cluster (with opts), closed when the test ends.
func (c *Cluster) JetStream(opts ...nats.Option) jetstream.JetStream {
	c.t.Helper()
	nc, err := nats.Connect(c.URLs(), opts...)
	if err != nil {
		c.t.Fatalf("connect to the cluster: %v", err)
	}
	c.t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		c.t.Fatalf("open jetstream: %v", err)
	}
	return js
}

// Publish publishes m, retrying for up to 10s while no server answers for
// the stream: right after a replicated stream is created (or elects a
// leader), the interest in its subjects may not have reached the node the
// client is connected to, which then answers "no responders".
func Publish(ctx context.Context, js jetstream.JetStream, m *nats.Msg) (*jetstream.PubAck, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		ack, err := js.PublishMsg(ctx, m)
		if !errors.Is(err, jetstream.ErrNoStreamResponse) || time.Now().After(deadline) || ctx.Err() != nil {
			return ack, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// CreateStream creates a stream, sending the request again (until ctx
// ends) while the server does not answer it (each attempt bounded by 15s),
// answers that JetStream is not available yet, or finds no peers to place
// it on: on a loaded machine a cluster's meta leader can change under a
// create, whose reply is then lost, and a new meta leader places nothing
// until it has heard from every peer. Creating the same stream again is
// harmless.
func CreateStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	const noPeers = 10005 // JSClusterNoPeersErrF
	for {
		actx, cancel := context.WithTimeout(ctx, 15*time.Second)
		s, err := js.CreateStream(actx, cfg)
		cancel()
		var apiErr *jetstream.APIError
		lost := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
			(errors.As(err, &apiErr) && (apiErr.Code == 503 || apiErr.ErrorCode == noPeers))
		if err == nil || !lost || ctx.Err() != nil {
			return s, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Context returns a context that ends after d, or when the test ends.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
