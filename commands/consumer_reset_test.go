package commands_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/commands"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go/jetstream"
)

// TestConsumerResetConfirm: at a terminal, without --execute or --dry-run,
// reset asks; "y" applies, anything else is a cancelled error (exit 6)
// that changes nothing. Without a terminal it never reads stdin.
func TestConsumerResetConfirm(t *testing.T) {
	s := testserver.Start(t)
	js, err := jetstream.New(testserver.Connect(t, s))
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
	if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	delivered := func() uint64 {
		c, err := js.Consumer(ctx, "ORDERS", "billing")
		if err != nil {
			t.Fatal(err)
		}
		return c.CachedInfo().Delivered.Stream
	}
	run := func(stdin string, terminal bool, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		args = append([]string{"--server", s.ClientURL(), "--tz", "UTC", "consumer", "reset", "ORDERS", "billing"}, args...)
		code := commands.Run(ctx, args, strings.NewReader(stdin), &out, &errb, terminal)
		return code, out.String(), errb.String()
	}

	code, _, stderr := run("n\n", true, "--to-seq", "3")
	if code != commands.ExitCancelled || !strings.Contains(stderr, "Apply this 1 change? [y/N]") ||
		!strings.Contains(stderr, `reset consumers on "ORDERS": not confirmed; nothing changed`) || delivered() != 0 {
		t.Fatalf("declined: code %d, stderr %q, delivered %d", code, stderr, delivered())
	}
	code, _, stderr = run("", true, "--to-seq", "3")
	if code != commands.ExitCancelled || delivered() != 0 {
		t.Fatalf("no answer: code %d, stderr %q", code, stderr)
	}
	code, stdout, stderr := run("y\n", true, "--to-seq", "3")
	if code != 0 || !strings.Contains(stdout, "verified") || delivered() != 2 {
		t.Fatalf("confirmed: code %d, stdout %q, stderr %q, delivered %d", code, stdout, stderr, delivered())
	}
	code, stdout, stderr = run("y\n", false, "--to-seq", "4")
	if code != 0 || strings.Contains(stderr, "Apply") || !strings.Contains(stdout, "Dry run") || delivered() != 2 {
		t.Fatalf("no terminal: code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = run("y\n", true, "--to-seq", "4", "--dry-run")
	if code != 0 || strings.Contains(stderr, "Apply") || delivered() != 2 {
		t.Fatalf("--dry-run at a terminal: code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
