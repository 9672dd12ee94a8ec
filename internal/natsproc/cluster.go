package natsproc

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// Cluster is a JetStream cluster of server processes.
type Cluster struct {
	Servers []*Server
	t       testing.TB
}

// StartCluster starts n server processes (n1..nN) that route to each
// other, each with o's extra configuration, and returns once every node
// is healthy (JetStream included, so the meta group has a leader).
func StartCluster(t testing.TB, n int, o Options) *Cluster {
	t.Helper()
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var ports []int
		if ports, err = freePorts(3 * n); err != nil {
			break
		}
		c := &Cluster{t: t}
		routes := make([]int, n)
		for i := range routes {
			routes[i] = ports[3*i+1]
		}
		for i := 0; i < n && err == nil; i++ {
			no := o
			no.Name = fmt.Sprintf("n%d", i+1)
			no.StoreDir = ""
			s := newServer(t, no, ports[3*i], ports[3*i+1], ports[3*i+2])
			if err = s.writeConfig(no, routes); err == nil {
				err = s.start()
			}
			c.Servers = append(c.Servers, s)
		}
		if err == nil {
			err = c.WaitHealthy(readyWait)
		}
		if err == nil {
			return c
		}
		for _, s := range c.Servers {
			s.Kill()
		}
	}
	t.Fatalf("start a %d-node nats-server cluster: %v", n, err)
	return nil
}

// URLs is the nodes' client URLs, comma separated.
func (c *Cluster) URLs() string {
	var u []string
	for _, s := range c.Servers {
		u = append(u, s.URL())
	}
	return strings.Join(u, ",")
}

// WaitHealthy waits (at most d) until every running node is healthy.
func (c *Cluster) WaitHealthy(d time.Duration) error {
	for _, s := range c.Servers {
		if !s.Running() {
			continue
		}
		if err := s.WaitHealthy(d); err != nil {
			return err
		}
	}
	return nil
}

// Server returns the node named name, nil when there is none.
func (c *Cluster) Server(name string) *Server {
	for _, s := range c.Servers {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Leader returns the node that leads a JetStream asset: the meta group
// when stream is "", the stream when consumer is "", else the consumer.
// Streams and consumers are asked through nc ($JS.API.STREAM.INFO and
// $JS.API.CONSUMER.INFO, cluster.leader), the meta group through the
// nodes' monitoring endpoint (/jsz). It fails when there is no leader now.
func (c *Cluster) Leader(nc *nats.Conn, stream, consumer string) (*Server, error) {
	var name string
	switch {
	case stream == "":
		for _, s := range c.Servers {
			if !s.Running() {
				continue
			}
			if n, err := s.metaLeader(); err == nil && n != "" {
				name = n
				break
			}
		}
	default:
		subject := "$JS.API.STREAM.INFO." + stream
		if consumer != "" {
			subject = "$JS.API.CONSUMER.INFO." + stream + "." + consumer
		}
		msg, err := nc.Request(subject, nil, 5*time.Second)
		if err != nil {
			return nil, fmt.Errorf("ask %s: %w", subject, err)
		}
		var info struct {
			Cluster struct {
				Leader string `json:"leader"`
			} `json:"cluster"`
			Error *struct {
				Description string `json:"description"`
			} `json:"error"`
		}
		if err := json.Unmarshal(msg.Data, &info); err != nil {
			return nil, fmt.Errorf("read %s reply: %w", subject, err)
		}
		if info.Error != nil {
			return nil, fmt.Errorf("%s: %s", subject, info.Error.Description)
		}
		name = info.Cluster.Leader
	}
	if s := c.Server(name); s != nil {
		return s, nil
	}
	return nil, fmt.Errorf("no leader of %q now", strings.Trim(stream+"."+consumer, "."))
}

// KillLeader kills (SIGKILL) the node that leads the asset (see Leader),
// waiting at most d for there to be one, and returns it for Restart.
func (c *Cluster) KillLeader(nc *nats.Conn, stream, consumer string, d time.Duration) (*Server, error) {
	deadline := time.Now().Add(d)
	for {
		s, err := c.Leader(nc, stream, consumer)
		if err == nil {
			s.Kill()
			return s, nil
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// metaLeader asks the node's /jsz for the meta group's leader.
func (s *Server) metaLeader() (string, error) {
	client := &http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/jsz", s.HTTPPort))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var jsz struct {
		Meta *struct {
			Leader string `json:"leader"`
		} `json:"meta_cluster"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&jsz); err != nil {
		return "", err
	}
	if jsz.Meta == nil {
		return "", fmt.Errorf("server %s reports no meta group", s.Name)
	}
	return jsz.Meta.Leader, nil
}
