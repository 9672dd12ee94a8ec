package natsproc

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// StartHubLeaf starts two servers with JetStream domains hubDomain and
// leafDomain, the second a leaf node of the first (one remote in the
// global account), and returns once the leaf connection is up.
func StartHubLeaf(t testing.TB, hubDomain, leafDomain string) (hub, leaf *Server) {
	t.Helper()
	ports, err := freePorts(1)
	if err != nil {
		t.Fatalf("start hub and leaf: %v", err)
	}
	hub = Start(t, Options{
		Name: "hub", JetStream: fmt.Sprintf("domain: %q", hubDomain),
		Config: fmt.Sprintf("leafnodes {\n  listen: \"127.0.0.1:%d\"\n}", ports[0]),
	})
	leaf = Start(t, Options{
		Name: "leaf", JetStream: fmt.Sprintf("domain: %q", leafDomain),
		Config: fmt.Sprintf("leafnodes {\n  remotes: [{url: \"nats-leaf://127.0.0.1:%d\"}]\n}", ports[0]),
	})
	if err := leaf.WaitLeafnodes(1, readyWait); err != nil {
		t.Fatalf("start hub and leaf: %v", err)
	}
	return hub, leaf
}

// WaitLeafnodes polls the server's /varz until it has n leaf node
// connections, at most d.
func (s *Server) WaitLeafnodes(n int, d time.Duration) error {
	deadline := time.Now().Add(d)
	client := &http.Client{Timeout: time.Second}
	url := fmt.Sprintf("http://127.0.0.1:%d/varz", s.HTTPPort)
	for {
		var varz struct {
			Leafnodes int `json:"leafnodes"`
		}
		if resp, err := client.Get(url); err == nil {
			err = json.NewDecoder(resp.Body).Decode(&varz)
			_ = resp.Body.Close()
			if err == nil && varz.Leafnodes == n {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server %s: no %d leaf node connections after %s: %s", s.Name, n, d, s.logTail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
