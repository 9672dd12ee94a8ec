package natsproc

import (
	"fmt"
	"os"
	"regexp"
)

// leafRemote finds the hub's address in a leaf node's configuration.
var leafRemote = regexp.MustCompile(`nats-leaf://127\.0\.0\.1:\d+`)

// CutLeaf restarts leaf, a leaf node server (StartHubLeaf), with its
// remote pointed at a port nobody listens on, so it receives nothing from
// its hub (replication lags) while it keeps serving its own clients.
func CutLeaf(leaf *Server) {
	leaf.t.Helper()
	conf, err := os.ReadFile(leaf.ConfigFile)
	if err != nil {
		leaf.t.Fatal(err)
	}
	if !leafRemote.Match(conf) {
		leaf.t.Fatalf("server %s has no leaf node remote: %s", leaf.Name, conf)
	}
	ports, err := freePorts(1)
	if err != nil {
		leaf.t.Fatal(err)
	}
	cut := leafRemote.ReplaceAll(conf, fmt.Appendf(nil, "nats-leaf://127.0.0.1:%d", ports[0]))
	if err := os.WriteFile(leaf.ConfigFile, cut, 0o644); err != nil {
		leaf.t.Fatal(err)
	}
	leaf.Restart()
}
