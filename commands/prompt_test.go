package commands_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/commands"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go/jetstream"
)

// resetFixture is a server with stream ORDERS (5 messages) and the durable
// pull consumer "billing" that has delivered nothing.
type resetFixture struct {
	t   *testing.T
	url string
	js  jetstream.JetStream
	bin string
}

func newResetFixture(t *testing.T) *resetFixture {
	t.Helper()
	bin, err := exec.LookPath("jsctl") // the test binary, put in PATH by testscript.Main
	if err != nil {
		t.Fatalf("jsctl is not in PATH: %v", err)
	}
	s := testserver.Start(t)
	js, err := jetstream.New(testserver.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testserver.Context(t, 30*time.Second)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, err := js.Publish(ctx, "orders.eu", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	return &resetFixture{t: t, url: s.ClientURL(), js: js, bin: bin}
}

// delivered is the consumer's delivered stream sequence (0 until moved).
func (f *resetFixture) delivered() uint64 {
	f.t.Helper()
	ctx := testserver.Context(f.t, 10*time.Second)
	c, err := f.js.Consumer(ctx, "ORDERS", "billing")
	if err != nil {
		f.t.Fatal(err)
	}
	return c.CachedInfo().Delivered.Stream
}

func (f *resetFixture) command(args ...string) *exec.Cmd {
	cmd := exec.Command(f.bin, append([]string{"consumer", "reset", "ORDERS", "billing"}, args...)...)
	cmd.Env = append(os.Environ(), "NATS_URL="+f.url, "JSCTL_TZ=UTC", "NATS_CONTEXT=", "JSCTL_EMBEDDED=", "XDG_CONFIG_HOME="+f.t.TempDir())
	return cmd
}

// TestPromptNeedsATerminal: /dev/null is a character device but no
// terminal: a job that discards its output is never prompted, and with
// --execute its plan is applied without reading stdin.
func TestPromptNeedsATerminal(t *testing.T) {
	f := newResetFixture(t)
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	cmd := f.command("--to-seq", "3", "--execute")
	var stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = null, null, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("reset --execute with stdin and stdout on /dev/null: %v (stderr %q), want exit 0 without a prompt", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "Apply") || f.delivered() != 2 {
		t.Fatalf("prompted or not applied: stderr %q, delivered %d", stderr.String(), f.delivered())
	}
}

// TestPromptPTY: at a real terminal, reset without --execute prints the plan
// and changes nothing, without asking; with --execute it shows the plan and
// asks: "y" applies, "n" cancels (exit 6), Ctrl-C cancels at once (exit 6,
// without waiting for Enter) and changes nothing; --yes and --export never ask.
func TestPromptPTY(t *testing.T) {
	f := newResetFixture(t)

	p := startPTY(t, f.command("--to-seq", "3"))
	if code := p.exit(30 * time.Second); code != 0 || strings.Contains(p.output(), "[y/N]") || f.delivered() != 0 {
		t.Fatalf("without --execute at a terminal: exit %d, delivered %d; terminal:\n%s", code, f.delivered(), p.output())
	}
	p.waitFor("Dry run: nothing changed. Pass --execute to apply.")

	p = startPTY(t, f.command("--to-seq", "3", "--execute"))
	p.waitFor("Apply this 1 change? [y/N] ")
	if out := p.output(); !strings.Contains(out, "billing") || strings.Contains(out, "Dry run") {
		t.Fatalf("before the question the plan is shown, without a dry-run note:\n%s", out)
	}
	p.send("n\r")
	if code := p.exit(30 * time.Second); code != commands.ExitCancelled || f.delivered() != 0 {
		t.Fatalf("answered n: exit %d, delivered %d; terminal:\n%s", code, f.delivered(), p.output())
	}
	p.waitFor(`reset consumers on "ORDERS": not confirmed; nothing changed`)

	p = startPTY(t, f.command("--to-seq", "3", "--execute"))
	p.waitFor("[y/N] ")
	p.send("\x03") // Ctrl-C: the terminal sends SIGINT
	if code := p.exit(5 * time.Second); code != commands.ExitCancelled {
		t.Fatalf("Ctrl-C at the prompt: exit %d, want %d; terminal:\n%s", code, commands.ExitCancelled, p.output())
	}
	p.waitFor("interrupted at the prompt; nothing changed") // the terminal may show it after the exit
	if f.delivered() != 0 {
		t.Fatalf("Ctrl-C at the prompt: delivered %d; terminal:\n%s", f.delivered(), p.output())
	}

	export := filepath.Join(t.TempDir(), "plan.json")
	p = startPTY(t, f.command("--to-seq", "3", "--export", export))
	if code := p.exit(30 * time.Second); code != 0 || strings.Contains(p.output(), "[y/N]") || f.delivered() != 0 {
		t.Fatalf("--export at a terminal: exit %d, delivered %d; terminal:\n%s", code, f.delivered(), p.output())
	}
	if _, err := os.Stat(export); err != nil {
		t.Fatalf("--export at a terminal wrote no plan: %v", err)
	}

	p = startPTY(t, f.command("--to-seq", "3", "--execute"))
	p.waitFor("[y/N] ")
	p.send("Yes\r")
	if code := p.exit(30 * time.Second); code != 0 || f.delivered() != 2 {
		t.Fatalf("answered Yes: exit %d, delivered %d; terminal:\n%s", code, f.delivered(), p.output())
	}
	p.waitFor("verified")

	p = startPTY(t, f.command("--to-seq", "4", "--execute", "--yes"))
	if code := p.exit(30 * time.Second); code != 0 || strings.Contains(p.output(), "[y/N]") || f.delivered() != 3 {
		t.Fatalf("--execute --yes at a terminal: exit %d, delivered %d; terminal:\n%s", code, f.delivered(), p.output())
	}
}

// TestPromptCancelledByContext: the prompt returns as soon as the command's
// context ends (a signal), without waiting for a line on stdin.
func TestPromptCancelledByContext(t *testing.T) {
	f := newResetFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	stdin, w := io.Pipe() // never written: the answer never comes
	defer w.Close()
	var out, errb testserver.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- commands.Run(ctx, []string{"--server", f.url, "consumer", "reset", "ORDERS", "billing", "--to-seq", "3", "--execute"}, stdin, &out, &errb, true)
	}()
	testserver.WaitFor(t, 30*time.Second, "the prompt", func() bool { return strings.Contains(errb.String(), "[y/N]") })
	cancel()
	select {
	case code := <-done:
		if code != commands.ExitCancelled || f.delivered() != 0 {
			t.Fatalf("cancelled at the prompt: exit %d, delivered %d, stderr %q", code, f.delivered(), errb.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the prompt did not return when the context was cancelled")
	}
}
