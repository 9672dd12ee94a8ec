package jsutil_test

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/jsutil"
)

func TestStartEmbeddedBusyPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	start := time.Now()
	s, err := jsutil.StartEmbedded(jsutil.EmbeddedOptions{StoreDir: t.TempDir(), Listen: true, Port: port})
	if err == nil {
		s.Shutdown()
		t.Fatal("started on a busy port")
	}
	if !strings.Contains(err.Error(), l.Addr().String()) || time.Since(start) > 5*time.Second {
		t.Errorf("busy port: %v after %s", err, time.Since(start))
	}
}

func TestStartEmbeddedListen(t *testing.T) {
	s, err := jsutil.StartEmbedded(jsutil.EmbeddedOptions{StoreDir: t.TempDir(), Listen: true, Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	if u := s.ClientURL(); !strings.HasPrefix(u, "nats://127.0.0.1:") {
		t.Errorf("ClientURL = %q, want loopback", u)
	}
	if _, err := jsutil.StartEmbedded(jsutil.EmbeddedOptions{}); err == nil {
		t.Error("started without a store directory")
	}
}

func TestStartEmbeddedStoreLocked(t *testing.T) {
	dir := t.TempDir()
	s, err := jsutil.StartEmbedded(jsutil.EmbeddedOptions{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	_, err = jsutil.StartEmbedded(jsutil.EmbeddedOptions{StoreDir: dir})
	if !errors.Is(err, jsutil.ErrConflict) || !strings.Contains(err.Error(), dir) {
		t.Errorf("second server over the same store: %v, want a conflict naming the directory", err)
	}
	s.Shutdown()
	// Shutdown releases the lock before it returns.
	s2, err := jsutil.StartEmbedded(jsutil.EmbeddedOptions{StoreDir: dir})
	if err != nil {
		t.Fatalf("store still locked after shutdown: %v", err)
	}
	s2.Shutdown()
}
