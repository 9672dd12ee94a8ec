package jsutil

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// errStoreBusy is lockStore's answer for a store locked by another server.
var errStoreBusy = errors.New("store directory is locked")

// EmbeddedServer is a JetStream server running in this process.
type EmbeddedServer struct {
	*server.Server
	once   sync.Once
	unlock func()
}

// Shutdown stops the server, waits until it is down (its store written and
// closed) and releases the store directory.
func (e *EmbeddedServer) Shutdown() {
	e.Server.Shutdown()
	e.Server.WaitForShutdown()
	e.unlock()
}

// EmbeddedOptions configure an in-process JetStream server.
type EmbeddedOptions struct {
	// StoreDir is the JetStream store directory. It is created if missing.
	StoreDir string
	// Listen makes the server accept TCP connections on Host:Port. Without
	// it the server is reachable only in-process.
	Listen bool
	// Host and Port of the TCP listener when Listen is set (Host defaults to
	// 127.0.0.1). Port 0 is the NATS default 4222; -1 picks a free port.
	Host string
	Port int
	// ServerName names the server; empty picks "jsctl".
	ServerName string
	// ReadyTimeout bounds the wait for the server to start (default 10s).
	ReadyTimeout time.Duration
}

// StartEmbedded starts a JetStream server in this process over
// opts.StoreDir and waits until it is ready for connections.
// The caller must call Shutdown on the result.
// The store directory is locked while the server runs; a second server
// over the same directory fails with an error wrapping ErrConflict.
func StartEmbedded(opts EmbeddedOptions) (*EmbeddedServer, error) {
	if opts.StoreDir == "" {
		return nil, Errorf(ErrBadInput, "embedded server needs a store directory")
	}
	dir, err := filepath.Abs(expandHome(opts.StoreDir))
	if err != nil {
		return nil, fmt.Errorf("store directory %q: %w", opts.StoreDir, err)
	}
	opts.StoreDir = dir
	if err := os.MkdirAll(opts.StoreDir, 0o755); err != nil {
		return nil, fmt.Errorf("create store directory %q: %w", opts.StoreDir, err)
	}
	unlock, err := lockStore(opts.StoreDir)
	if errors.Is(err, errStoreBusy) {
		return nil, Errorf(ErrConflict, "store directory %q is in use by another server (jsctl serve or --embedded); stop it or point at it with --server", opts.StoreDir)
	}
	if err != nil {
		return nil, fmt.Errorf("lock store directory %q: %w", opts.StoreDir, err)
	}
	started := false
	defer func() {
		if !started {
			unlock()
		}
	}()
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
	switch {
	case !opts.Listen:
		sopts.Port = -1
	case opts.Port == 0:
		sopts.Port = server.DEFAULT_PORT
	}
	if opts.Listen && sopts.Port > 0 {
		// The server reports a busy port only by never becoming ready, so
		// try the address first to fail at once with the reason.
		addr := net.JoinHostPort(sopts.Host, strconv.Itoa(sopts.Port))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("listen on %s: %w", addr, err)
		}
		l.Close()
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
		s.WaitForShutdown()
		return nil, fmt.Errorf("embedded server over %q did not start within %s", opts.StoreDir, wait)
	}
	started = true
	e := &EmbeddedServer{Server: s}
	e.unlock = func() { e.once.Do(unlock) }
	go func() { // in case the server stops by other means
		s.WaitForShutdown()
		e.unlock()
	}()
	return e, nil
}
