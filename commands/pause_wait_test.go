package commands_test

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/jsctl/jsctl/commands"
	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// lockedBuffer is a bytes.Buffer a running command writes while the test
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// heldDelivery makes stream ORDERS with 5 messages and consumer billing
// that delivered message 1 to a client that holds it unacknowledged.
func heldDelivery(t *testing.T, nc *nats.Conn) {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, err := js.Publish(ctx, "orders.eu", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	if err := testserver.Take(cons, 1, 10*time.Second, func(jetstream.Msg) error { return nil }); err != nil {
		t.Fatal(err)
	}
}

// startReset runs consumer reset with args in the background; the channel
// gets its exit code.
func startReset(ctx context.Context, url string, stdout, stderr *lockedBuffer, args ...string) chan int {
	args = append([]string{"--server", url, "--tz", "UTC", "consumer", "reset", "ORDERS", "billing"}, args...)
	done := make(chan int, 1)
	go func() { done <- commands.Run(ctx, args, strings.NewReader(""), stdout, stderr, false) }()
	return done
}

func exitOf(t *testing.T, done chan int, stdout, stderr *lockedBuffer) int {
	t.Helper()
	select {
	case code := <-done:
		return code
	case <-time.After(2 * time.Minute):
		t.Fatalf("the command did not end; stdout %q, stderr %q", stdout, stderr)
		return 0
	}
}

// TestPauseDrainCancelled (issue 17, item 9): while --pause waits for a
// held delivery, stderr says what it waits for; Ctrl-C then ends the run
// with one outcome, "cancelled", never "settled in 0s".
func TestPauseDrainCancelled(t *testing.T) {
	s := testserver.Start(t)
	heldDelivery(t, testserver.Connect(t, s))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := startReset(ctx, s.ClientURL(), &stdout, &stderr, "--to-seq", "3", "--pause", "--drain-timeout", "5m", "--execute")
	testserver.WaitFor(t, time.Minute, "the wait line", func() bool {
		return strings.Contains(stderr.String(), `jsctl: waiting for 1 delivery of "billing" on "ORDERS" to be acknowledged, 0s of 5m0s`+"\n")
	})
	cancel() // Ctrl-C
	code := exitOf(t, done, &stdout, &stderr)
	out := stdout.String()
	if code != commands.ExitCancelled || !regexp.MustCompile(`(?m)^  billing: pause: paused; cancelled after \S+, waiting for 1 delivery; resumed$`).MatchString(out) || strings.Contains(out, "settled") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", code, out, stderr.String())
	}
}

// TestServerDiesMidCommand (issue 17, item 10): the server process is
// killed while reset --pause waits for a held delivery. stderr says at
// once what jsctl waits for and for how long, and the run gives up within
// its --retry-for budget instead of waiting out --drain-timeout and then a
// budget per step.
func TestServerDiesMidCommand(t *testing.T) {
	t.Parallel() // mostly waits (on processes, servers, timers): runs beside the others
	s := natsproc.Start(t, natsproc.Options{})
	nc, err := nats.Connect(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	heldDelivery(t, nc)
	var stdout, stderr lockedBuffer
	done := startReset(context.Background(), s.URL(), &stdout, &stderr, "--to-seq", "3", "--pause", "--drain-timeout", "5m", "--execute", "--timeout", "1s", "--retry-for", "3s")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	testserver.WaitFor(t, time.Minute, "jsctl to pause the consumer", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := js.Consumer(ctx, "ORDERS", "billing")
		return err == nil && c.CachedInfo().Paused
	})
	s.Kill()
	notice := regexp.MustCompile(`(?m)^jsctl: no answer from the server; asking again for up to [1-3]s \(Ctrl-C to stop\)$`)
	testserver.WaitFor(t, time.Minute, "the notice", func() bool { return notice.MatchString(stderr.String()) })
	killed := time.Now()
	code := exitOf(t, done, &stdout, &stderr)
	t.Logf("exit %d %s after the kill\nstdout:\n%s\nstderr:\n%s", code, time.Since(killed).Round(time.Millisecond), stdout.String(), stderr.String())
	if code != commands.ExitConnection {
		t.Fatalf("exit %d, want %d", code, commands.ExitConnection)
	}
}

// TestPauseDrainLiveLine (issue 17, item 9): at a terminal the wait is one
// line redrawn in place and cleared when the wait ends, before the result.
func TestPauseDrainLiveLine(t *testing.T) {
	s := testserver.Start(t)
	heldDelivery(t, testserver.Connect(t, s))
	ptm, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptm.Close()
	screen := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(ptm) // until the terminal side is closed (EIO)
		screen <- string(b)
	}()
	var stdout bytes.Buffer
	args := []string{"--server", s.ClientURL(), "--tz", "UTC", "consumer", "reset", "ORDERS", "billing", "--to-seq", "3", "--pause", "--drain-timeout", "1s", "--execute"}
	code := commands.Run(context.Background(), args, strings.NewReader(""), &stdout, tty, false)
	tty.Close()
	var out string
	select {
	case out = <-screen:
	case <-time.After(time.Minute):
		t.Fatal("the terminal was not closed")
	}
	live := "\r\x1b[Kwaiting for 1 delivery of \"billing\" on \"ORDERS\" to be acknowledged, 0s of 1s"
	if code != commands.ExitConflict || !strings.HasPrefix(out, live) || !strings.Contains(out, "\r\x1b[Kjsctl: error: ") || strings.Contains(out, "jsctl: waiting") ||
		!strings.Contains(stdout.String(), "billing: pause: paused; timed out after ") {
		t.Fatalf("exit %d, terminal %q, stdout:\n%s", code, out, stdout.String())
	}
}
