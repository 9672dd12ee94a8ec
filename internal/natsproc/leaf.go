package natsproc

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// HubLeaf is a hub server and a leaf node server connected to it, each
// with its own JetStream domain (in the default account), as a site that
// mirrors a hub's streams over a leaf node connection.
type HubLeaf struct {
	Hub, Leaf *Server
	// HubDomain and LeafDomain are their JetStream domains.
	HubDomain, LeafDomain string
	// LeafPort is the hub's leaf node port.
	LeafPort int
}

// StartHubLeaf starts a hub with JetStream domain hubDomain, listening for
// leaf nodes, and a leaf node with domain leafDomain that connects to it;
// it returns once the hub reports the leaf node connected.
func StartHubLeaf(t testing.TB, hubDomain, leafDomain string) *HubLeaf {
	t.Helper()
	ports, err := freePorts(1)
	if err != nil {
		t.Fatalf("start hub and leaf: %v", err)
	}
	h := &HubLeaf{HubDomain: hubDomain, LeafDomain: leafDomain, LeafPort: ports[0]}
	h.Hub = Start(t, Options{Name: "hub", JetStream: fmt.Sprintf("domain: %q", hubDomain),
		Config: fmt.Sprintf("leafnodes {\n  listen: \"127.0.0.1:%d\"\n}\n", h.LeafPort)})
	h.Leaf = Start(t, Options{Name: "leaf", JetStream: fmt.Sprintf("domain: %q", leafDomain), Config: h.remote(h.LeafPort)})
	if err := h.WaitConnected(readyWait); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *HubLeaf) remote(port int) string {
	return fmt.Sprintf("leafnodes {\n  remotes: [ { url: \"nats-leaf://127.0.0.1:%d\" } ]\n}\n", port)
}

// Cut restarts the leaf node without its connection to the hub (its
// remote points at a port nobody listens on), so it receives nothing from
// the hub; Join restarts it connected again and waits for the connection.
func (h *HubLeaf) Cut() {
	h.Leaf.t.Helper()
	ports, err := freePorts(1)
	if err != nil {
		h.Leaf.t.Fatal(err)
	}
	h.rewriteLeaf(ports[0])
	h.Leaf.Restart()
}

// Join reconnects the leaf node after Cut.
func (h *HubLeaf) Join() {
	h.Leaf.t.Helper()
	h.rewriteLeaf(h.LeafPort)
	h.Leaf.Restart()
	if err := h.WaitConnected(readyWait); err != nil {
		h.Leaf.t.Fatal(err)
	}
}

// rewriteLeaf points the leaf's configuration at the hub's leaf node port
// port (taking effect at its next start).
func (h *HubLeaf) rewriteLeaf(port int) {
	b, err := os.ReadFile(h.Leaf.ConfigFile)
	if err != nil {
		h.Leaf.t.Fatal(err)
	}
	conf := string(b)
	i := strings.Index(conf, "leafnodes {")
	if i < 0 {
		h.Leaf.t.Fatalf("leaf configuration without leafnodes block: %s", conf)
	}
	if err := os.WriteFile(h.Leaf.ConfigFile, []byte(conf[:i]+h.remote(port)), 0o644); err != nil {
		h.Leaf.t.Fatal(err)
	}
}

// WaitConnected polls the hub's /leafz until it reports a leaf node, at
// most d.
func (h *HubLeaf) WaitConnected(d time.Duration) error {
	deadline := time.Now().Add(d)
	client := &http.Client{Timeout: time.Second}
	url := fmt.Sprintf("http://127.0.0.1:%d/leafz", h.Hub.HTTPPort)
	for {
		if resp, err := client.Get(url); err == nil {
			var lz struct {
				Leafs int `json:"leafnodes"`
			}
			err = json.NewDecoder(resp.Body).Decode(&lz)
			_ = resp.Body.Close()
			if err == nil && lz.Leafs > 0 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("leaf node not connected to the hub after %s: %s", d, h.Leaf.logTail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
