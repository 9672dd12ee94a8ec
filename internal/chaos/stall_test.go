//go:build !windows

// SIGSTOP and SIGCONT are Unix signals: the stall is a Unix test.

package chaos

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go/jetstream"
)

// Finding 10: a jsctl consume stalled (SIGSTOP, standing in for a paused VM
// or a frozen container) longer than its lease. The server expires its
// claim; a second worker takes the message over and runs it with a higher
// JSCTL_FENCE, which is what orders the two runs (docs/guarantees.md).
// When the first process resumes (SIGCONT) it stops its command at once,
// before it sends anything, and records nothing: the record is the second
// run's done. Before, both commands ran to the end, each believing it held
// the message.
func TestStalledWorkerStopsItsCommand(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	e := newEnv(t, natsproc.Options{})
	ctx := testserver.Context(t, 2*time.Minute)
	if _, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: "STALL", Subjects: []string{"stall.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.js.Publish(ctx, "stall.1", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.js.CreateOrUpdateConsumer(ctx, "STALL", jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 3 * time.Second}); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "runs")
	handler := func(who string) string {
		return `trap 'echo "stopped ` + who + `" >> ` + log + `; exit 1' TERM; echo "start ` + who + ` $JSCTL_FENCE" >> ` + log + `; sleep 30 & wait; echo "end ` + who + `" >> ` + log
	}
	lines := func() string {
		b, _ := os.ReadFile(log)
		return string(b)
	}
	var outA, errA bytes.Buffer
	a := e.command("consume", "STALL", "c", "--lease", "2s", "--max", "1", "--exec", handler("A"))
	a.Stdout, a.Stderr = &outA, &errA
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Process.Kill(); _ = a.Wait() })
	testserver.WaitFor(t, 30*time.Second, "worker A's command to start", func() bool { return strings.Contains(lines(), "start A") })
	if err := a.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stalled := time.Now()

	// B takes the message over once A's lease has run out on the server.
	var outB, errB bytes.Buffer
	b := e.command("consume", "STALL", "c", "--lease", "2s", "--max", "1",
		"--exec", `echo "start B $JSCTL_FENCE" >> `+log+`; echo "end B" >> `+log)
	b.Stdout, b.Stderr = &outB, &errB
	if err := b.Run(); err != nil {
		t.Fatalf("worker B: %v\n%s%s", err, outB.String(), errB.String())
	}
	t.Logf("worker A stalled %v; B: %s", time.Since(stalled).Round(time.Millisecond), strings.TrimSpace(outB.String()))

	resumed := time.Now()
	if err := a.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	testserver.WaitFor(t, 20*time.Second, "worker A to stop its command", func() bool { return strings.Contains(lines(), "stopped A") })
	stopped := time.Since(resumed)
	done := make(chan error, 1)
	go func() { done <- a.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("worker A did not end after its lease was lost\n%s", lines())
	}
	t.Logf("worker A stopped its command %v after SIGCONT; it said: %s%s", stopped.Round(time.Millisecond), outA.String(), errA.String())
	if stopped > 3*time.Second {
		t.Errorf("worker A took %v to stop its command after resuming (want at once: within a renewal tick)", stopped)
	}
	got := lines()
	if strings.Contains(got, "end A") || !strings.Contains(got, "end B") {
		t.Fatalf("runs:\n%s", got)
	}
	fence := func(who string) uint64 {
		m := regexp.MustCompile(`start ` + who + ` (\d+)`).FindStringSubmatch(got)
		if m == nil {
			t.Fatalf("no fence for %s:\n%s", who, got)
		}
		n, _ := strconv.ParseUint(m[1], 10, 64)
		return n
	}
	fa, fb := fence("A"), fence("B")
	if fb <= fa {
		t.Errorf("JSCTL_FENCE A %d, B %d: the run that took over must carry the higher fence", fa, fb)
	}
	st, err := acks.OpenExisting(context.Background(), e.js, acks.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.Get(ctx, "STALL.c", acks.KeyFromSequence, "1")
	if err != nil || r.State != acks.StateDone || r.Fence != fb {
		t.Fatalf("record after both runs: %+v %v, want done with B's fence %d", r, err, fb)
	}
}
