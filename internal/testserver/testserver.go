// Package testserver starts JetStream servers for tests: a single server on a
// random loopback port, or an in-process cluster of several nodes.
package testserver

import (
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
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
// has a meta leader.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	t.Cleanup(c.Shutdown)
	ports := make([]int, n)
	routes := make([]*url.URL, n)
	for i := range ports {
		ports[i] = freePort(t)
		routes[i] = &url.URL{Scheme: "nats-route", Host: fmt.Sprintf("127.0.0.1:%d", ports[i])}
	}
	for i := 0; i < n; i++ {
		o := &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1),
			Host:       "127.0.0.1",
			Port:       -1,
			JetStream:  true,
			StoreDir:   t.TempDir(),
			NoLog:      true,
			NoSigs:     true,
			Routes:     routes,
		}
		o.Cluster.Name = "jsctl-test"
		o.Cluster.Host = "127.0.0.1"
		o.Cluster.Port = ports[i]
		s, err := server.NewServer(o)
		if err != nil {
			t.Fatalf("start cluster node %d: %v", i+1, err)
		}
		go s.Start()
		c.Servers = append(c.Servers, s)
	}
	for i, s := range c.Servers {
		if !s.ReadyForConnections(20 * time.Second) {
			t.Fatalf("cluster node %d did not start", i+1)
		}
	}
	c.WaitForMetaLeader()
	return c
}

// WaitForMetaLeader waits (polling, bounded) until some node is the
// JetStream meta leader and all nodes see each other.
func (c *Cluster) WaitForMetaLeader() {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ok := false
		for _, s := range c.Servers {
			if s.JetStreamIsLeader() {
				ok = true
			}
		}
		for _, s := range c.Servers {
			if s.NumRoutes() < len(c.Servers)-1 || !s.JetStreamIsCurrent() {
				ok = false
			}
		}
		if ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("cluster has no meta leader")
}

// freePort asks the kernel for a free loopback port. Route listeners need
// their ports known before the nodes start, since every node lists every
// other node as a route.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
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
