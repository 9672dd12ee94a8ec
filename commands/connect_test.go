package commands_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jsctl/jsctl/commands"
)

// silentServer accepts TCP connections and never says anything. accepted
// is closed at the first connection.
func silentServer(t *testing.T) (url string, accepted <-chan struct{}) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{})
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		var once sync.Once
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			once.Do(func() { close(ch) })
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "nats://" + l.Addr().String(), ch
}

// TestSilentServerExitCode: a server that accepts and never answers makes
// a command exit 4 within about --timeout.
func TestSilentServerExitCode(t *testing.T) {
	url, _ := silentServer(t)
	const timeout = 500 * time.Millisecond
	var out, errOut bytes.Buffer
	start := time.Now()
	code := commands.Run(context.Background(), []string{"-s", url, "--timeout", timeout.String(), "seek", "ORDERS", "now"},
		strings.NewReader(""), &out, &errOut, false)
	took := time.Since(start)
	if code != commands.ExitConnection {
		t.Fatalf("exit %d, want %d: %s", code, commands.ExitConnection, errOut.String())
	}
	if !strings.Contains(errOut.String(), url) {
		t.Errorf("error does not name %s: %s", url, errOut.String())
	}
	if took > 5*timeout+time.Second {
		t.Errorf("gave up after %s with --timeout %s", took, timeout)
	}
	t.Logf("%s after %s", strings.TrimSpace(errOut.String()), took)
}

// TestInterruptExitCode: SIGINT while a command waits makes jsctl stop at
// once with exit code 6.
func TestInterruptExitCode(t *testing.T) {
	bin, err := exec.LookPath("jsctl")
	if err != nil {
		t.Fatalf("jsctl is not in PATH: %v", err)
	}
	url, accepted := silentServer(t)
	cmd := exec.Command(bin, "-s", url, "--timeout", "60s", "seek", "ORDERS", "now")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	select {
	case <-accepted: // jsctl is connecting, so its signal handler is in place
	case <-time.After(30 * time.Second):
		t.Fatal("jsctl never connected")
	}
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != commands.ExitCancelled {
		t.Fatalf("after SIGINT: %v, want exit %d; stderr: %s", err, commands.ExitCancelled, stderr.String())
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %s to stop after SIGINT", took)
	}
	if !strings.Contains(stderr.String(), "canceled") && !strings.Contains(stderr.String(), "cancelled") {
		t.Errorf("stderr: %s", stderr.String())
	}
}
