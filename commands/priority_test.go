package commands_test

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/commands"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go/jetstream"
)

// TestResetPriorityPinned (issue 17): a consumer with a priority group and
// a pinned client (policy pinned_client). The plan shows the group and the
// pin; a reset in place keeps the pin and --unpin releases it after the
// move; a recreate keeps every priority setting (the pin, server state,
// is dropped, as the plan says).
func TestResetPriorityPinned(t *testing.T) {
	s := testserver.Start(t)
	js, err := jetstream.New(testserver.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if _, err := js.Publish(ctx, "orders.eu", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	cfg := jetstream.ConsumerConfig{Durable: "workers", AckPolicy: jetstream.AckExplicitPolicy,
		PriorityPolicy: jetstream.PriorityPolicyPinned, PriorityGroups: []string{"jobs"}, PinnedTTL: 2 * time.Minute}
	if _, err := js.CreateConsumer(ctx, "ORDERS", cfg); err != nil {
		t.Fatal(err)
	}
	// A pinned client (a new one each time: a client keeps the pin it
	// had): its first pull request of group "jobs" pins it.
	pin := func() string {
		t.Helper()
		cons, err := js.Consumer(ctx, "ORDERS", "workers")
		if err != nil {
			t.Fatal(err)
		}
		batch, err := cons.Fetch(2, jetstream.FetchPriorityGroup("jobs"), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			_ = m.Ack()
		}
		id := pinnedID(t, ctx, js)
		if id == "" {
			t.Fatalf("the client was not pinned (%v)", batch.Error())
		}
		return id
	}
	id := pin()
	run := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		args = append([]string{"--server", s.ClientURL(), "--tz", "UTC", "consumer", "reset", "ORDERS", "workers"}, args...)
		code := commands.Run(ctx, args, strings.NewReader(""), &out, &errb, false)
		return code, out.String() + errb.String()
	}
	line := func(tail string) *regexp.Regexp {
		return regexp.MustCompile(`(?m)^  workers: priority: policy pinned_client \(pinned TTL 2m0s\), group jobs pinned to client ` + id + ` since \S+Z` + regexp.QuoteMeta(tail) + `$`)
	}

	code, out := run("--to-seq", "3")
	if code != 0 || !line("; kept by the reset in place (--unpin releases it)").MatchString(out) {
		t.Fatalf("plan: exit %d\n%s", code, out)
	}
	code, out = run("--to-seq", "3", "--unpin", "--execute")
	if code != 0 || !line(" (released); released after the move (--unpin)").MatchString(out) || pinnedID(t, ctx, js) != "" {
		t.Fatalf("--unpin: exit %d, pinned %q\n%s", code, pinnedID(t, ctx, js), out)
	}

	id = pin()
	code, out = run("--to-seq", "2", "--method", "recreate", "--execute")
	if code != 0 || !line("; settings kept, the pin dropped by the recreate (the next pull request of the group is pinned)").MatchString(out) {
		t.Fatalf("recreate: exit %d\n%s", code, out)
	}
	c, err := js.Consumer(ctx, "ORDERS", "workers")
	if err != nil {
		t.Fatal(err)
	}
	got := c.CachedInfo().Config
	if got.PriorityPolicy != cfg.PriorityPolicy || strings.Join(got.PriorityGroups, ",") != "jobs" || got.PinnedTTL != cfg.PinnedTTL {
		t.Fatalf("recreated with priority policy %v, groups %v, pinned TTL %s", got.PriorityPolicy, got.PriorityGroups, got.PinnedTTL)
	}
}

// pinnedID is the client pinned in group "jobs" of ORDERS/workers ("" for
// none).
func pinnedID(t *testing.T, ctx context.Context, js jetstream.JetStream) string {
	t.Helper()
	c, err := js.Consumer(ctx, "ORDERS", "workers")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range c.CachedInfo().PriorityGroups {
		if g.Group == "jobs" {
			return g.PinnedClientID
		}
	}
	return ""
}
