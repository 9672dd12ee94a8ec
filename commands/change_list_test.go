package commands_test

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jsctl/jsctl/commands"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go/jetstream"
)

// answerAfter is stdin at a terminal whose user, while the question is
// asked, has something else happen (then answers y).
type answerAfter struct {
	once   sync.Once
	during func()
	r      io.Reader
}

func (a *answerAfter) Read(p []byte) (int, error) {
	a.once.Do(func() {
		a.during()
		a.r = strings.NewReader("y\n")
	})
	return a.r.Read(p)
}

// TestListChangeActsOnPlanned: consumer pause, resume and snapshot rm act
// only on the object their plan showed. A consumer deleted and created
// again while the question waits, or a snapshot removed and saved again
// under its name, is refused (exit 5) and left as it is.
func TestListChangeActsOnPlanned(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t)
	js, err := jetstream.New(testserver.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testserver.Context(t, 2*time.Minute)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	create := func() {
		if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Fatal(err)
		}
	}
	recreate := func() {
		if err := js.DeleteConsumer(ctx, "ORDERS", "billing"); err != nil {
			t.Error(err)
		}
		if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Error(err)
		}
	}
	create()
	// run is at a terminal (stdin answers the question); script runs the
	// other changes, without one.
	run := func(stdin io.Reader, args ...string) (int, string) {
		var out bytes.Buffer
		code := commands.Run(ctx, append([]string{"--server", s.ClientURL()}, args...), stdin, &out, &out, true)
		return code, out.String()
	}
	script := func(args ...string) {
		var out bytes.Buffer
		if code := commands.Run(ctx, append([]string{"--server", s.ClientURL()}, args...), strings.NewReader(""), &out, &out, false); code != 0 {
			t.Errorf("%v: exit %d\n%s", args, code, out.String()) // not Fatal: it may run on the prompt's goroutine
		}
	}
	paused := func() bool {
		c, err := js.Consumer(ctx, "ORDERS", "billing")
		if err != nil {
			t.Fatal(err)
		}
		return c.CachedInfo().Paused
	}

	code, out := run(&answerAfter{during: recreate}, "consumer", "pause", "ORDERS", "billing", "--execute")
	if code != commands.ExitConflict || !strings.Contains(out, "deleted and created again since the plan was made") || paused() {
		t.Fatalf("pause of a consumer created again at the prompt: exit %d, paused %v\n%s", code, paused(), out)
	}

	if code, out := run(strings.NewReader(""), "consumer", "pause", "ORDERS", "billing", "--execute", "--yes"); code != 0 || !paused() {
		t.Fatalf("pause: exit %d\n%s", code, out)
	}
	code, out = run(&answerAfter{during: func() {
		recreate()
		if _, err := js.PauseConsumer(ctx, "ORDERS", "billing", time.Now().Add(time.Hour)); err != nil {
			t.Error(err)
		}
	}}, "consumer", "resume", "ORDERS", "billing", "--execute")
	if code != commands.ExitConflict || !strings.Contains(out, "deleted and created again since the plan was made") || !paused() {
		t.Fatalf("resume of a consumer created again at the prompt: exit %d, paused %v\n%s", code, paused(), out)
	}

	if code, out := run(strings.NewReader(""), "consumer", "snapshot", "save", "pre", "ORDERS", "billing"); code != 0 {
		t.Fatalf("snapshot save: exit %d\n%s", code, out)
	}
	code, out = run(&answerAfter{during: func() {
		script("consumer", "snapshot", "rm", "pre", "--execute")
		script("consumer", "snapshot", "save", "pre", "ORDERS", "billing", "--description", "the new one")
	}}, "consumer", "snapshot", "rm", "pre", "--execute")
	if code != commands.ExitConflict || !strings.Contains(out, "changed since it was read") {
		t.Fatalf("rm of a snapshot saved again at the prompt: exit %d\n%s", code, out)
	}
	if code, out := run(strings.NewReader(""), "consumer", "snapshot", "show", "pre"); code != 0 || !strings.Contains(out, "the new one") {
		t.Fatalf("the snapshot saved again is gone: exit %d\n%s", code, out)
	}
}
