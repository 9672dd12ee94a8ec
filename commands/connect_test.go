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
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go/jetstream"
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

// clearConnectEnv clears the connection variables a developer's shell may
// hold, so Run sees only the flags a case gives.
func clearConnectEnv(t *testing.T) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", home+"/.config")
	for _, k := range []string{"NATS_URL", "NATS_CONTEXT", "NATS_CREDS", "NATS_NKEY", "NATS_USER", "NATS_PASSWORD", "NATS_TOKEN", "NATS_CERT", "NATS_KEY", "NATS_CA", "NATS_JS_DOMAIN", "JSCTL_EMBEDDED"} {
		t.Setenv(k, "")
	}
	t.Setenv("NATS_TIMEOUT", "5s")
	t.Setenv("JSCTL_TZ", "UTC")
}

// TestLongValuesAreBadInput: a value too long for what it names is bad
// input (exit 2) naming the flag and the limit, found before anything is
// sent. A 10 KB --scope, --bucket or --js-domain used to exceed the
// server's protocol line limit, so the server dropped the connection and
// jsctl reported "connection lost" (exit 4); a 5000-byte --context was
// "file name too long" (exit 1).
func TestLongValuesAreBadInput(t *testing.T) {
	clearConnectEnv(t)
	s := testserver.Start(t)
	js, err := jetstream.New(testserver.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := acks.Open(ctx, js); err != nil { // the default bucket exists
		t.Fatal(err)
	}
	long := strings.Repeat("a", 10*1024)
	url := s.ClientURL()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"acks ls --scope", []string{"-s", url, "acks", "ls", "--scope", long}, `--scope "aaaa`},
		{"acks stats --scope", []string{"-s", url, "acks", "stats", "--scope", long}, "a scope is at most 511 bytes"},
		{"acks get SCOPE", []string{"-s", url, "acks", "get", long, "1"}, "a scope is at most 511 bytes"},
		{"acks ls --bucket", []string{"-s", url, "acks", "ls", "--bucket", long}, `--bucket "aaaa`},
		{"consumer reset --bucket", []string{"-s", url, "consumer", "reset", "ORDERS", "c", "--to-seq", "1", "--bucket", long}, "a bucket name is 1 to 252 letters"},
		{"--js-domain", []string{"-s", url, "--js-domain", long, "seek", "ORDERS", "now"}, "--js-domain: JetStream domain \"aaaa"},
		{"--js-domain length", []string{"-s", url, "--js-domain", long, "seek", "ORDERS", "now"}, "a domain is at most 255 bytes"},
		{"--context", []string{"--context", long[:5000], "seek", "ORDERS", "now"}, "--context: context name \"aaaa"},
		{"--context length", []string{"--context", long[:5000], "seek", "ORDERS", "now"}, "a context name is at most 250 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := commands.Run(ctx, tc.args, strings.NewReader(""), &out, &errOut, false)
			msg := errOut.String()
			if code != commands.ExitUsage {
				t.Errorf("exit %d, want %d (bad input); stderr: %.300s", code, commands.ExitUsage, msg)
			}
			if !strings.Contains(msg, tc.want) {
				t.Errorf("stderr lacks %q: %.300s", tc.want, msg)
			}
			if strings.Contains(msg, long[:100]) {
				t.Errorf("stderr quotes the whole value: %.300s", msg)
			}
		})
	}
}
