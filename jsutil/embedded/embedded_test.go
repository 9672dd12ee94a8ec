package embedded_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/embedded"
	"github.com/nats-io/nats.go/jetstream"
)

func TestStartBusyPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	// With a readiness wait longer than any test, an error that names the
	// address (not "did not start within") proves the busy port was found
	// at once, without waiting for a server that never becomes ready.
	s, err := embedded.Start(embedded.Options{StoreDir: t.TempDir(), Listen: true, Port: port, ReadyTimeout: time.Hour})
	if err == nil {
		s.Shutdown()
		t.Fatal("started on a busy port")
	}
	if !strings.Contains(err.Error(), "listen on "+l.Addr().String()) || strings.Contains(err.Error(), "did not start") {
		t.Errorf("busy port: %v", err)
	}
}

func TestStartListen(t *testing.T) {
	s, err := embedded.Start(embedded.Options{StoreDir: t.TempDir(), Listen: true, Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	if u := s.ClientURL(); !strings.HasPrefix(u, "nats://127.0.0.1:") {
		t.Errorf("ClientURL = %q, want loopback", u)
	}
	if _, err := embedded.Start(embedded.Options{}); err == nil {
		t.Error("started without a store directory")
	}
}

func TestStartStoreLocked(t *testing.T) {
	dir := t.TempDir()
	s, err := embedded.Start(embedded.Options{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	_, err = embedded.Start(embedded.Options{StoreDir: dir})
	if !errors.Is(err, jsutil.ErrConflict) || !strings.Contains(err.Error(), dir) {
		t.Errorf("second server over the same store: %v, want a conflict naming the directory", err)
	}
	s.Shutdown()
	// Shutdown releases the lock before it returns.
	s2, err := embedded.Start(embedded.Options{StoreDir: dir})
	if err != nil {
		t.Fatalf("store still locked after shutdown: %v", err)
	}
	s2.Shutdown()
}

// connect starts an embedded server over dir and connects to it in-process.
func connect(t *testing.T, dir string, sync embedded.Sync) (*embedded.Server, *jsutil.Client) {
	t.Helper()
	s, err := embedded.Start(embedded.Options{StoreDir: dir, Sync: sync})
	if err != nil {
		t.Fatal(err)
	}
	c, err := jsutil.Connect(context.Background(), jsutil.ConnectOptions{InProcess: s, InProcessName: "embedded " + dir, Timeout: 5 * time.Second})
	if err != nil {
		s.Shutdown()
		t.Fatal(err)
	}
	return s, c
}

func TestEmbeddedKeepsData(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, c := connect(t, dir, embedded.SyncAlways)
	if c.URL != "embedded "+dir {
		t.Errorf("URL = %q", c.URL)
	}
	if _, err := c.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "KEEP", Subjects: []string{"keep"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.JS.Publish(ctx, "keep", []byte("x")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	s.Shutdown()

	s, c = connect(t, dir, embedded.SyncAlways)
	defer s.Shutdown()
	defer c.Close()
	st, err := c.JS.Stream(ctx, "KEEP")
	if err != nil {
		t.Fatal(err)
	}
	if n := st.CachedInfo().State.Msgs; n != 1 {
		t.Errorf("after reopening: %d messages, want 1", n)
	}
}

// TestSyncPolicy: the server syncs every write unless told otherwise, and
// --sync DURATION becomes its sync interval.
func TestSyncPolicy(t *testing.T) {
	s, c := connect(t, t.TempDir(), embedded.SyncAlways)
	cfg := s.JetStreamConfig()
	c.Close()
	s.Shutdown()
	if cfg == nil || !cfg.SyncAlways {
		t.Fatalf("default policy: JetStream config %+v, want SyncAlways", cfg)
	}
	s, c = connect(t, t.TempDir(), embedded.Sync(30*time.Second))
	cfg = s.JetStreamConfig()
	c.Close()
	s.Shutdown()
	if cfg == nil || cfg.SyncAlways || cfg.SyncInterval != 30*time.Second {
		t.Fatalf("--sync 30s: JetStream config %+v, want an interval of 30s", cfg)
	}
	for in, want := range map[string]embedded.Sync{"always": embedded.SyncAlways, "ALWAYS": embedded.SyncAlways, "": embedded.SyncAlways, "2m": embedded.Sync(2 * time.Minute)} {
		if got, err := embedded.ParseSync(in); err != nil || got != want {
			t.Errorf("ParseSync(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"never", "0s", "-1s", "1"} {
		if _, err := embedded.ParseSync(in); !errors.Is(err, jsutil.ErrBadInput) {
			t.Errorf("ParseSync(%q) = %v, want a bad-input error", in, err)
		}
	}
}

// TestResolveDir: relative, "~" and odd file names become absolute paths,
// never URLs.
func TestResolveDir(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	wd, _ := os.Getwd()
	for in, want := range map[string]string{
		"data":      filepath.Join(wd, "data"),
		".":         wd,
		"./data/":   filepath.Join(wd, "data"),
		"~":         home,
		"~/data":    filepath.Join(home, "data"),
		"50%zz:x@y": filepath.Join(wd, "50%zz:x@y"),
	} {
		if got, err := embedded.ResolveDir(in); err != nil || got != want {
			t.Errorf("ResolveDir(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := embedded.ResolveDir(" "); !errors.Is(err, jsutil.ErrBadInput) {
		t.Errorf("ResolveDir(blank) = %v, want bad input", err)
	}
}
