// Package embedded runs a NATS JetStream server inside the process, over a
// store directory: what `jsctl --embedded DIR`, `jsctl serve` and `jsctl
// demo` use. It is the only package of the library that imports
// nats-server, so programs that import jsutil, jsutil/seek or jsutil/acks
// do not compile the server.
//
// Connect to a Server without TCP by handing it to jsutil.Connect as
// ConnectOptions.InProcess (or to nats.InProcessServer).
//
// Safety of the store:
//   - The server fsyncs every write before acknowledging it unless Options.Sync
//     says otherwise (nats-server's own default syncs every two minutes).
//   - A store directory is locked (jsctl.lock, flock) while a Server uses it,
//     so two jsctl processes never open the same store.
//   - nats-server takes no lock of its own, so before starting, Start looks for
//     a nats-server process using the directory (see inUse) and refuses it.
package embedded

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats-server/v2/server"
)

// errStoreBusy is lockStore's answer for a store locked by another server.
var errStoreBusy = errors.New("store directory is locked")

// Sync is a server's fsync policy: SyncAlways, or the interval between
// background syncs of everything written.
type Sync time.Duration

// SyncAlways syncs every write to disk before it is acknowledged
// (nats-server's sync_interval: always). It is the zero value and jsctl's
// default.
const SyncAlways Sync = 0

// ParseSync reads "always" or a positive duration ("2m", "10s"). Errors wrap
// jsutil.ErrBadInput.
func ParseSync(s string) (Sync, error) {
	in := strings.TrimSpace(s)
	if in == "" || strings.EqualFold(in, "always") {
		return SyncAlways, nil
	}
	d, err := time.ParseDuration(in)
	if err != nil || d <= 0 {
		return 0, jsutil.Errorf(jsutil.ErrBadInput, "cannot read --sync %q: use always or a positive duration such as 1s or 2m", s)
	}
	return Sync(d), nil
}

// String says the policy in the words jsctl prints.
func (s Sync) String() string {
	if s == SyncAlways {
		return "always"
	}
	return time.Duration(s).String()
}

// Describe explains the policy in a sentence fragment.
func (s Sync) Describe() string {
	if s == SyncAlways {
		return "fsync always: every write is on disk before it is acknowledged"
	}
	return fmt.Sprintf("fsync every %s: a power failure or OS crash can lose up to %s of acknowledged writes", time.Duration(s), time.Duration(s))
}

// Server is a JetStream server running in this process.
type Server struct {
	*server.Server
	// Dir is the store directory, absolute.
	Dir string
	// Sync is the fsync policy in force.
	Sync   Sync
	once   sync.Once
	unlock func()
}

// Shutdown stops the server, waits until it is down (its store written and
// closed) and releases the store directory.
func (e *Server) Shutdown() {
	e.Server.Shutdown()
	e.Server.WaitForShutdown()
	e.unlock()
}

// Options configure an in-process JetStream server.
type Options struct {
	// StoreDir is the JetStream store directory. It is created if missing.
	// A relative path is taken from the working directory and a leading
	// "~" is the home directory (see ResolveDir).
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
	// Sync is the fsync policy (SyncAlways by default).
	Sync Sync
}

func inUseError(dir string, u *user) error {
	return jsutil.Errorf(jsutil.ErrConflict, "store directory %q is in use by %s; stop that server, or point jsctl at it with --server instead of --embedded", dir, u)
}

// ResolveDir turns a store directory as a user typed it into a clean
// absolute path: "~" and "~/..." are the home directory, anything else
// relative is taken from the working directory. The result is never
// parsed as a URL, so any character a file name may hold is fine.
func ResolveDir(dir string) (string, error) {
	if strings.TrimSpace(dir) == "" {
		return "", jsutil.Errorf(jsutil.ErrBadInput, "the store directory is empty: name a directory")
	}
	if dir == "~" || strings.HasPrefix(dir, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", jsutil.Errorf(jsutil.ErrBadInput, "store directory %q: cannot find the home directory: %w", dir, err)
		}
		dir = filepath.Join(home, dir[1:])
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", jsutil.Errorf(jsutil.ErrBadInput, "store directory %q: %w", dir, err)
	}
	return abs, nil
}

// Start starts a JetStream server in this process over opts.StoreDir and
// waits until it is ready for connections. The caller must call Shutdown on
// the result.
//
// The store directory is locked while the server runs; a second server over
// the same directory, or a directory that a running nats-server uses (as far
// as inUse can tell), fails with an error wrapping jsutil.ErrConflict before
// anything is written to it.
func Start(opts Options) (*Server, error) {
	dir, err := ResolveDir(opts.StoreDir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "store directory %q is a file, not a directory", dir)
	}
	// Before anything is written to the directory.
	if u := inUse(dir); u != nil {
		return nil, inUseError(dir, u)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "create store directory %q: %w", dir, err)
	}
	unlock, err := lockStore(dir)
	if errors.Is(err, errStoreBusy) {
		return nil, jsutil.Errorf(jsutil.ErrConflict, "store directory %q is in use by another jsctl (serve or --embedded); stop it or point at it with --server", dir)
	}
	if err != nil {
		return nil, fmt.Errorf("lock store directory %q: %w", dir, err)
	}
	started := false
	defer func() {
		if !started {
			unlock()
		}
	}()
	if u := inUse(dir); u != nil { // again, now that no other jsctl can start
		return nil, inUseError(dir, u)
	}
	name := opts.ServerName
	if name == "" {
		name = "jsctl"
	}
	sopts := &server.Options{
		ServerName:         name,
		JetStream:          true,
		StoreDir:           dir,
		NoSigs:             true,
		NoLog:              true,
		DontListen:         !opts.Listen,
		Host:               opts.Host,
		Port:               opts.Port,
		MaxPayload:         8 * 1024 * 1024,
		JetStreamMaxMemory: -1,
		JetStreamMaxStore:  -1,
	}
	if opts.Sync == SyncAlways {
		// As nats-server reads `sync_interval: always`.
		sopts.SyncAlways = true
		sopts.SyncInterval = 2 * time.Minute
	} else {
		sopts.SyncInterval = time.Duration(opts.Sync)
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
		return nil, fmt.Errorf("start embedded server over %q: %w", dir, err)
	}
	go s.Start()
	wait := opts.ReadyTimeout
	if wait <= 0 {
		wait = 10 * time.Second
	}
	if !s.ReadyForConnections(wait) {
		s.Shutdown()
		s.WaitForShutdown()
		return nil, fmt.Errorf("embedded server over %q did not start within %s", dir, wait)
	}
	started = true
	e := &Server{Server: s, Dir: dir, Sync: opts.Sync}
	e.unlock = func() { e.once.Do(unlock) }
	go func() { // in case the server stops by other means
		s.WaitForShutdown()
		e.unlock()
	}()
	return e, nil
}
