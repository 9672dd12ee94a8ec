// Package natsproc runs real nats-server processes for fault-injection
// tests: a server built from the nats-server module version this module
// requires, started as a separate process on 127.0.0.1 with random free
// ports, a configuration file and its own JetStream store. A test can stop
// it (SIGTERM), kill it (SIGKILL, by PID) and restart it on the same ports
// and store, alone or as one node of a cluster.
//
// Every process is stopped by its PID when the test ends, and every wait
// is bounded.
//
//	s := natsproc.Start(t, natsproc.Options{JetStream: "sync_interval: always"})
//	nc, _ := nats.Connect(s.URL())
//	s.Kill()    // kill -9
//	s.Restart() // same ports, same store; returns once it is healthy
//
//	c := natsproc.StartCluster(t, 3, natsproc.Options{})
//	leader, _ := c.Leader(nc, "ORDERS", "") // the stream's leader
//	leader.Kill()
//	leader.Restart()
package natsproc

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Options configure a server process.
type Options struct {
	// Name is the server_name (default "n1"; a cluster names its nodes
	// n1, n2, ...).
	Name string
	// JetStream is extra configuration inside the jetstream block, such
	// as "sync_interval: always".
	JetStream string
	// Config is extra top-level configuration: accounts, authorization,
	// users and their permissions.
	Config string
	// StoreDir is the JetStream store (default: a directory of the test's;
	// StartCluster gives each node its own).
	StoreDir string
	// Binary is the nats-server executable to run (default: Binary, the
	// pinned module version; VersionBinary builds another version).
	Binary string
}

// Server is one nats-server process.
type Server struct {
	// Name is its server_name.
	Name string
	// Port, ClusterPort and HTTPPort are its client, cluster (0 when not
	// clustered) and monitoring ports, kept across restarts.
	Port, ClusterPort, HTTPPort int
	// StoreDir is its JetStream store; ConfigFile its configuration.
	StoreDir, ConfigFile string
	// LogFile collects the process's output (appended across restarts).
	LogFile string

	t   testing.TB
	bin string

	mu   sync.Mutex
	cmd  *exec.Cmd
	exit chan struct{} // closed when the current process has exited
}

// readyWait bounds how long a start or restart waits for the server to be
// healthy.
const readyWait = 60 * time.Second

// Start builds nats-server (see Binary) and starts one server process for
// t, on random free ports; it returns once the server reports itself
// healthy. The process is killed when the test ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	if o.Name == "" {
		o.Name = "n1"
	}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var ports []int
		if ports, err = freePorts(2); err != nil {
			break
		}
		s := newServer(t, o, ports[0], 0, ports[1])
		if err = s.writeConfig(o, nil); err != nil {
			break
		}
		if err = s.start(); err == nil {
			if err = s.WaitHealthy(readyWait); err == nil {
				return s
			}
		}
		s.Kill() // a port was taken meanwhile, most likely: try others
	}
	t.Fatalf("start nats-server: %v", err)
	return nil
}

func newServer(t testing.TB, o Options, port, clusterPort, httpPort int) *Server {
	dir := t.TempDir()
	store := o.StoreDir
	if store == "" {
		store = filepath.Join(dir, "store")
	}
	s := &Server{
		Name: o.Name, Port: port, ClusterPort: clusterPort, HTTPPort: httpPort,
		StoreDir: store, ConfigFile: filepath.Join(dir, "nats-server.conf"), LogFile: filepath.Join(dir, "nats-server.log"),
		t: t, bin: o.Binary,
	}
	if s.bin == "" {
		s.bin = Binary(t)
	}
	t.Cleanup(s.Kill)
	return s
}

// writeConfig writes the configuration file; routes are the cluster's
// route ports (nil for a single server).
func (s *Server) writeConfig(o Options, routes []int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "server_name: %q\nlisten: \"127.0.0.1:%d\"\nhttp: \"127.0.0.1:%d\"\n", s.Name, s.Port, s.HTTPPort)
	fmt.Fprintf(&b, "jetstream {\n  store_dir: %q\n  %s\n}\n", s.StoreDir, o.JetStream)
	if s.ClusterPort != 0 {
		var r []string
		for _, p := range routes {
			r = append(r, fmt.Sprintf("\"nats-route://127.0.0.1:%d\"", p))
		}
		fmt.Fprintf(&b, "cluster {\n  name: \"natsproc\"\n  listen: \"127.0.0.1:%d\"\n  routes: [%s]\n}\n", s.ClusterPort, strings.Join(r, ", "))
	}
	b.WriteString(o.Config)
	b.WriteString("\n")
	return os.WriteFile(s.ConfigFile, []byte(b.String()), 0o644)
}

// start starts the process (not waiting for it to be ready).
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return fmt.Errorf("server %s is running", s.Name)
	}
	log, err := os.OpenFile(s.LogFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.bin, "-c", s.ConfigFile)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return err
	}
	exit := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = log.Close()
		close(exit)
	}()
	s.cmd, s.exit = cmd, exit
	return nil
}

// URL is the client URL.
func (s *Server) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", s.Port) }

// PID is the process id, 0 when it is not running.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Running reports whether the process is running.
func (s *Server) Running() bool { return s.PID() != 0 }

// Kill sends SIGKILL to the process (by PID) and waits for it to be gone.
// It does nothing when the server is not running.
func (s *Server) Kill() { s.signal(syscall.SIGKILL, 10*time.Second) }

// Stop sends SIGTERM (a clean shutdown) and waits up to 30s, then kills.
func (s *Server) Stop() {
	if !s.signal(syscall.SIGTERM, 30*time.Second) {
		s.Kill()
	}
}

// signal sends sig and waits up to d for the process to exit; false when
// it did not.
func (s *Server) signal(sig syscall.Signal, d time.Duration) bool {
	s.mu.Lock()
	cmd, exit := s.cmd, s.exit
	s.mu.Unlock()
	if cmd == nil {
		return true
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return false // a signal this platform cannot send (SIGTERM on Windows)
	}
	select {
	case <-exit:
	case <-time.After(d):
		return false
	}
	s.mu.Lock()
	if s.cmd == cmd {
		s.cmd, s.exit = nil, nil
	}
	s.mu.Unlock()
	return true
}

// Restart starts the server again after Kill or Stop, on the same ports
// with the same store, and returns once it is healthy. A running server is
// stopped first.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.t.Fatalf("restart nats-server %s: %v", s.Name, err)
	}
	if err := s.WaitHealthy(readyWait); err != nil {
		s.t.Fatalf("restart nats-server %s: %v", s.Name, err)
	}
}

// WaitHealthy polls the server's /healthz (JetStream included) until it
// answers 200, at most d.
func (s *Server) WaitHealthy(d time.Duration) error {
	deadline := time.Now().Add(d)
	client := &http.Client{Timeout: time.Second}
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz", s.HTTPPort)
	for {
		s.mu.Lock()
		exit := s.exit
		s.mu.Unlock()
		if exit == nil {
			return fmt.Errorf("server %s is not running", s.Name)
		}
		select {
		case <-exit:
			return fmt.Errorf("server %s exited: %s", s.Name, s.logTail())
		default:
		}
		if resp, err := client.Get(url); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server %s not healthy after %s: %s", s.Name, d, s.logTail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// LogTail returns the last n bytes of the server's log (all runs of the
// process since the test started), for failure messages.
func (s *Server) LogTail(n int) string {
	b, _ := os.ReadFile(s.LogFile)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(bytes.TrimSpace(b))
}

func (s *Server) logTail() string { return s.LogTail(2000) }

// freePorts returns n ports the kernel just handed out (they may be taken
// again before the server binds them; Start retries).
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Binary returns the path of a nats-server binary built from the
// nats-server module version this module requires (from the module
// cache: `go build github.com/nats-io/nats-server/v2`). It is built once
// and kept under os.TempDir, keyed by the module version and the Go
// version, for later calls and runs.
func Binary(t testing.TB) string {
	t.Helper()
	bin, err := build()
	if err != nil {
		t.Fatalf("build nats-server: %v", err)
	}
	return bin
}

func build() (string, error) {
	version, err := serverVersion()
	if err != nil {
		return "", err
	}
	bin := pinnedPath(version)
	dir := filepath.Dir(bin)
	if fi, err := os.Stat(bin); err == nil && fi.Mode()&0o111 != 0 {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	// Build to a file of our own and rename it into place, so concurrent
	// test processes never run a half-written binary.
	tmp, err := os.CreateTemp(dir, "nats-server-*.tmp")
	if err != nil {
		return "", err
	}
	_ = tmp.Close()
	defer os.Remove(tmp.Name())
	cmd := exec.Command("go", "build", "-o", tmp.Name(), serverModule)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v: %s", err, out)
	}
	if err := os.Rename(tmp.Name(), bin); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	return bin, nil
}

// serverModule is the module (and main package) of nats-server.
const serverModule = "github.com/nats-io/nats-server/v2"

// serverVersion is the nats-server version this test binary was built
// with: the one this module requires.
func serverVersion() (string, error) {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == serverModule {
				if d.Replace != nil {
					return "", fmt.Errorf("%s is replaced (by %s): build the server yourself", serverModule, d.Replace.Path)
				}
				return d.Version, nil
			}
		}
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", serverModule).Output()
	if err != nil {
		return "", fmt.Errorf("go list %s: %w", serverModule, err)
	}
	return strings.TrimSpace(string(out)), nil
}
