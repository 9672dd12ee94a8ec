package commands

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/embedded"
)

// ServeCmd runs an embedded JetStream server in the foreground.
type ServeCmd struct {
	Store string `name:"store" required:"" placeholder:"DIR" help:"JetStream store directory (created if missing)."`
	Addr  string `name:"addr" default:"127.0.0.1:4222" placeholder:"HOST:PORT" help:"Address to listen on (port 0 picks a free port)."`
}

// Help is the long help of serve.
func (ServeCmd) Help() string {
	return `Runs a JetStream server over DIR until interrupted (SIGINT or SIGTERM), then shuts
it down cleanly so nothing written to the store is lost, and exits 0. The first line
printed is the client URL; point NATS_URL, -s or any NATS client at it. The server
has no authentication: keep it on a loopback address. DIR is locked while the
server runs, so "jsctl --embedded DIR" meanwhile is refused (exit 5) rather than
corrupting the store; use -s with the printed URL instead.

Every write is synced to disk before it is acknowledged (--sync always, the
default); --sync DURATION syncs in the background at that interval instead
(nats-server's own default is 2m). The policy in force is printed on start.

Examples:
  jsctl serve --store ./data
  jsctl serve --store ./data --addr 127.0.0.1:0     # a free port, printed on start
  jsctl serve --store ./data --sync 1s              # faster writes, up to 1s at risk
  jsctl --embedded ./data seek ORDERS -1h           # later: the same store, in-process`
}

// Run serves until ctx is done.
func (c *ServeCmd) Run(ctx context.Context, env *Env) error {
	if c.Store == "" {
		return jsutil.Errorf(jsutil.ErrBadInput, "--store must name a directory")
	}
	host, portStr, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return jsutil.Errorf(jsutil.ErrBadInput, "read --addr %q: %w", c.Addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return jsutil.Errorf(jsutil.ErrBadInput, "read --addr %q: port must be a number from 0 to 65535", c.Addr)
	}
	if port == 0 {
		port = -1
	}
	sync, err := env.SyncPolicy()
	if err != nil {
		return err
	}
	s, err := embedded.Start(embedded.Options{StoreDir: c.Store, Listen: true, Host: host, Port: port, Sync: sync})
	if err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, s.ClientURL())
	fmt.Fprintf(env.Stderr, "jsctl: serving JetStream over %s (%s); interrupt to stop\n", s.Dir, sync.Describe())
	<-ctx.Done()
	s.Shutdown() // waits until the store is written and closed
	fmt.Fprintln(env.Stderr, "jsctl: server stopped")
	return nil
}
