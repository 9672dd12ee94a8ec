package jsutil

import (
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// EmbeddedOptions configure an in-process JetStream server.
type EmbeddedOptions struct {
	// StoreDir is the JetStream store directory. It is created if missing.
	StoreDir string
	// Listen makes the server accept TCP connections on Host:Port. Without
	// it the server is reachable only in-process.
	Listen bool
	// Host and Port of the TCP listener when Listen is set. Port -1 picks a
	// random free port.
	Host string
	Port int
	// ServerName names the server; empty picks "jsctl".
	ServerName string
	// ReadyTimeout bounds the wait for the server to start (default 10s).
	ReadyTimeout time.Duration
}

// StartEmbedded starts a JetStream server in this process over
// opts.StoreDir and waits until it is ready for connections.
// The caller must call Shutdown (and WaitForShutdown) on the result.
func StartEmbedded(opts EmbeddedOptions) (*server.Server, error) {
	if opts.StoreDir == "" {
		return nil, Errorf(ErrBadInput, "embedded server needs a store directory")
	}
	if err := os.MkdirAll(opts.StoreDir, 0o755); err != nil {
		return nil, fmt.Errorf("create store directory %q: %w", opts.StoreDir, err)
	}
	name := opts.ServerName
	if name == "" {
		name = "jsctl"
	}
	sopts := &server.Options{
		ServerName:         name,
		JetStream:          true,
		StoreDir:           opts.StoreDir,
		NoSigs:             true,
		NoLog:              true,
		DontListen:         !opts.Listen,
		Host:               opts.Host,
		Port:               opts.Port,
		MaxPayload:         8 * 1024 * 1024,
		JetStreamMaxMemory: -1,
		JetStreamMaxStore:  -1,
	}
	if opts.Listen && sopts.Host == "" {
		sopts.Host = "127.0.0.1"
	}
	if !opts.Listen {
		sopts.Port = -1
	}
	s, err := server.NewServer(sopts)
	if err != nil {
		return nil, fmt.Errorf("start embedded server over %q: %w", opts.StoreDir, err)
	}
	go s.Start()
	wait := opts.ReadyTimeout
	if wait <= 0 {
		wait = 10 * time.Second
	}
	if !s.ReadyForConnections(wait) {
		s.Shutdown()
		return nil, fmt.Errorf("embedded server over %q did not start within %s", opts.StoreDir, wait)
	}
	return s, nil
}
