package commands_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jsctl/jsctl/commands"
	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/embedded"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const serveMsgs = 200

// fillStore connects to url, creates stream ORDERS and publishes serveMsgs
// acknowledged messages.
func fillStore(t *testing.T, url string) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatalf("connect to %s: %v", url, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatalf("create stream: %v", err)
	}
	for i := 1; i <= serveMsgs; i++ {
		if _, err := js.Publish(ctx, "orders.eu", fmt.Appendf(nil, "order %d", i)); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
}

// checkStore opens dir with an embedded server and checks that everything
// fillStore wrote is there.
func checkStore(t *testing.T, dir string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := embedded.Start(embedded.Options{StoreDir: dir})
	if err != nil {
		t.Fatalf("open %s embedded: %v", dir, err)
	}
	defer srv.Shutdown()
	c, err := jsutil.Connect(ctx, jsutil.ConnectOptions{InProcess: srv})
	if err != nil {
		t.Fatalf("connect to the embedded server over %s: %v", dir, err)
	}
	defer c.Close()
	st, err := c.JS.Stream(ctx, "ORDERS")
	if err != nil {
		t.Fatalf("stream ORDERS after restart: %v", err)
	}
	if got := st.CachedInfo().State; got.Msgs != serveMsgs || got.LastSeq != serveMsgs {
		t.Fatalf("after restart: %d messages, last sequence %d; want %d", got.Msgs, got.LastSeq, serveMsgs)
	}
	m, err := st.GetMsg(ctx, serveMsgs)
	if err != nil || string(m.Data) != fmt.Sprintf("order %d", serveMsgs) {
		t.Fatalf("last message after restart: %v %q", err, m.Data)
	}
}

// readURL returns the first line of r: the URL serve prints.
func readURL(t *testing.T, r io.Reader) string {
	t.Helper()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatalf("read the URL serve prints: %v (got %q)", err, line)
	}
	url := strings.TrimSpace(line)
	if !strings.HasPrefix(url, "nats://127.0.0.1:") {
		t.Fatalf("serve printed %q, want a loopback nats:// URL", url)
	}
	return url
}

// TestServeStopsCleanly runs serve in-process, writes through it, stops it
// as a signal would (by cancelling its context) and reopens the store.
func TestServeStopsCleanly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		code := commands.Run(ctx, []string{"serve", "--store", dir, "--addr", "127.0.0.1:0"}, strings.NewReader(""), pw, &stderr, false)
		pw.Close()
		done <- code
	}()
	url := readURL(t, pr)
	go io.Copy(io.Discard, pr)
	fillStore(t, url)
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d: %s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop after its context was cancelled")
	}
	if !strings.Contains(stderr.String(), "server stopped") {
		t.Errorf("serve stderr: %q", stderr.String())
	}
	// serve says which fsync policy is in force; the default is always.
	if !strings.Contains(stderr.String(), "(fsync always: every write is on disk before it is acknowledged)") {
		t.Errorf("serve does not print its fsync policy: %q", stderr.String())
	}
	checkStore(t, dir)

	// The same store through --embedded, via the CLI.
	var out, errOut bytes.Buffer
	args := []string{"--embedded", dir, "--json", "seek", "ORDERS", "1970-01-01T00:00:00Z"}
	if code := commands.Run(context.Background(), args, strings.NewReader(""), &out, &errOut, false); code != 0 {
		t.Fatalf("--embedded seek: exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), `"sequence": 1,`) {
		t.Errorf("--embedded seek: %s", out.String())
	}
}

// TestServeSIGTERM runs `jsctl serve` as a child process (the test binary
// under the name jsctl, which testscript puts in PATH), sends it SIGTERM and
// checks that it exits 0 and that the store holds everything written.
func TestServeSIGTERM(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			bin, err := exec.LookPath("jsctl")
			if err != nil {
				t.Fatalf("jsctl is not in PATH: %v", err)
			}
			dir := filepath.Join(t.TempDir(), "store")
			cmd := exec.Command(bin, "serve", "--store", dir, "--addr", "127.0.0.1:0")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			url := readURL(t, out)
			go io.Copy(io.Discard, out)
			fillStore(t, url)
			// The store is locked while serve runs.
			var o, e bytes.Buffer
			if code := commands.Run(context.Background(), []string{"--embedded", dir, "seek", "ORDERS", "now"}, strings.NewReader(""), &o, &e, false); code != commands.ExitConflict {
				t.Errorf("--embedded over a served store: exit %d, want %d: %s", code, commands.ExitConflict, e.String())
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			waited := make(chan error, 1)
			go func() { waited <- cmd.Wait() }()
			select {
			case err := <-waited:
				if err != nil {
					t.Fatalf("jsctl serve after %s: %v\n%s", sig, err, stderr.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("jsctl serve did not stop after %s", sig)
			}
			checkStore(t, dir)
		})
	}
}
