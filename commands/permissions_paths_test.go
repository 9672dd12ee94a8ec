package commands_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/nats-io/nats.go/jetstream"
)

// permPaths lists every path of every command that talks to a server
// (TestPermissionsCoverCommands fails for a command that has none). Each
// runs on its own stream {S} (20 messages, consumer bill) with the buckets
// made beforehand, or none with firstUse.
func permPaths() []permPath {
	exec := []string{"--execute", "--yes"}
	move := func(args ...string) []string {
		return append(append([]string{"consumer", "reset", "{S}", "bill"}, args...), exec...)
	}
	return []permPath{
		{cmd: "seek", name: "by time", args: []string{"seek", "{S}", "-1h"}},
		{cmd: "seek", name: "--around", args: []string{"seek", "{S}", "now", "--around", "2"}},
		{cmd: "stream timeline", name: "whole stream", args: []string{"stream", "timeline", "{S}", "--buckets", "3"}},
		{cmd: "stream timeline", name: "--subject", args: []string{"stream", "timeline", "{S}", "--subject", "{s}.eu", "--buckets", "3"}},

		{cmd: "consumer ls", name: "list", args: []string{"consumer", "ls", "{S}"}},
		{cmd: "consumer ls", name: "first use", firstUse: true, args: []string{"consumer", "ls", "{S}"}},
		{cmd: "consumer ls", name: "--streams", args: []string{"consumer", "ls", "--streams", "{S}"}},
		{cmd: "consumer info", name: "info", setup: delivered(5), args: []string{"consumer", "info", "{S}", "bill"}},
		{cmd: "consumer history", name: "history", setup: adminReset("--to-seq", "3"), args: []string{"consumer", "history", "{S}", "bill"}},
		{cmd: "consumer pause", name: "pause", args: []string{"consumer", "pause", "{S}", "bill", "--until", "+1h"}},
		{cmd: "consumer resume", name: "resume", setup: paused, args: []string{"consumer", "resume", "{S}", "bill"}},

		{cmd: "consumer reset", name: "plan", setup: delivered(5), args: []string{"consumer", "reset", "{S}", "bill", "--to-seq", "3"}},
		{cmd: "consumer reset", name: "first use, in place", firstUse: true, setup: delivered(5), args: move("--to-seq", "3"), expect: "in place"},
		{cmd: "consumer reset", name: "in place", setup: delivered(5), args: move("--to-seq", "3"), expect: "in place"},
		{cmd: "consumer reset", name: "filtered, in place", setup: filtered(5), args: move("--to-seq", "3"), expect: "in place"},
		{cmd: "consumer reset", name: "recreate", setup: delivered(5), args: move("--to-seq", "3", "--method", "recreate"), expect: "recreate"},
		{cmd: "consumer reset", name: "auto falling back to recreate", setup: startAt(10), args: move("--to-seq", "3"), expect: "recreate"},
		{cmd: "consumer reset", name: "--pause", setup: delivered(5), args: move("--to-seq", "3", "--pause")},
		{cmd: "consumer reset", name: "--to-consumer", setup: other, args: move("--to-consumer", "other")},
		{cmd: "consumer reset", name: "--forget-acks", setup: consumed, args: move("--to-seq", "1", "--forget-acks")},
		{cmd: "consumer reset", name: "--to-previous", setup: adminReset("--to-seq", "3"), args: move("--to-previous")},
		{cmd: "consumer reset", name: "--to-previous of a recreate", setup: adminReset("--to-seq", "3", "--method", "recreate"), args: move("--to-previous")},
		{cmd: "consumer reset", name: "--to-previous rebuilding a deleted consumer", setup: both(adminReset("--to-seq", "3"), deleteBill), args: move("--to-previous")},

		{cmd: "consumer recover", name: "plan", setup: intent(intentSpec{seq: 3, method: reset.Reset}), args: []string{"consumer", "recover", "{S}"}},
		{cmd: "consumer recover", name: "in place", setup: intent(intentSpec{seq: 3, method: reset.Reset}), args: []string{"consumer", "recover", "{S}", "--execute", "--yes"}},
		{cmd: "consumer recover", name: "in place, consumer deleted", setup: intent(intentSpec{seq: 3, method: reset.Reset, deleteConsumer: true}), args: []string{"consumer", "recover", "{S}", "--execute", "--yes"}},
		{cmd: "consumer recover", name: "recreate after the delete", setup: intent(intentSpec{seq: 3, method: reset.Recreate, deleteConsumer: true}), args: []string{"consumer", "recover", "{S}", "--execute", "--yes"}},
		{cmd: "consumer recover", name: "recreate after the create", setup: intent(intentSpec{seq: 3, method: reset.Recreate, deleteConsumer: true, recreate: true}), args: []string{"consumer", "recover", "{S}", "--execute", "--yes"}},
		{cmd: "consumer recover", name: "--pause", setup: intent(intentSpec{seq: 3, method: reset.Reset, paused: true}), args: []string{"consumer", "recover", "{S}", "--execute", "--yes"}},

		{cmd: "consumer check", name: "Nagios", setup: delivered(5), args: []string{"consumer", "check", "{S}", "bill"}},
		{cmd: "consumer check", name: "Prometheus", setup: delivered(5), args: []string{"consumer", "check", "{S}", "--all", "--format", "prometheus"}},
		{cmd: "consumer check", name: "--streams", setup: delivered(5), args: []string{"consumer", "check", "--streams", "{S}", "--all"}},
		{cmd: "consumer check", name: "--failed-records-warn", setup: consumedFailing, args: []string{"consumer", "check", "{S}", "bill", "--failed-records-warn", "100"}},

		{cmd: "consumer snapshot save", name: "first use", firstUse: true, setup: delivered(5), args: []string{"consumer", "snapshot", "save", "s{S}", "{S}", "bill"}},
		{cmd: "consumer snapshot save", name: "--all", setup: delivered(5), args: []string{"consumer", "snapshot", "save", "s{S}", "{S}", "--all"}},
		{cmd: "consumer snapshot save", name: "with ack records", setup: consumed, args: []string{"consumer", "snapshot", "save", "s{S}", "{S}", "bill"}},
		{cmd: "consumer snapshot ls", name: "ls", setup: snapshot(false), args: []string{"consumer", "snapshot", "ls"}},
		{cmd: "consumer snapshot show", name: "show", setup: snapshot(false), args: []string{"consumer", "snapshot", "show", "s{S}"}},
		{cmd: "consumer snapshot rm", name: "rm", setup: snapshot(false), args: []string{"consumer", "snapshot", "rm", "s{S}", "--yes"}},
		{cmd: "consumer snapshot restore", name: "present consumer", setup: snapshot(false), args: []string{"consumer", "snapshot", "restore", "s{S}", "--execute", "--yes"}},
		{cmd: "consumer snapshot restore", name: "deleted consumer", setup: snapshot(true), args: []string{"consumer", "snapshot", "restore", "s{S}", "--execute", "--yes"}},

		{cmd: "consumer copy", name: "one connection", setup: replica, args: []string{"consumer", "copy", "{S}", "bill", "--to-stream", "{R}", "--execute", "--yes"}},
		{cmd: "consumer copy", name: "both connections", setup: replica, args: []string{"consumer", "copy", "{S}", "bill", "--to-stream", "{R}", "--to-server", "{URL}", "--execute", "--yes"}},

		{cmd: "consume", name: "first use", firstUse: true, args: []string{"consume", "{S}", "bill", "--exec", "true", "--max", "20"}},
		{cmd: "consume", name: "done", args: []string{"consume", "{S}", "bill", "--exec", "true", "--max", "20"}},
		{cmd: "consume", name: "retries and dead letters", setup: dlStream,
			args: []string{"consume", "{S}", "bill", "--exec", "exit 1", "--max", "40", "--max-failures", "2", "--retry-delay", "10ms", "--dead-letter", "{DL}"}, want: 1},
		{cmd: "consume", name: "retries without dead letters",
			args: []string{"consume", "{S}", "bill", "--exec", "exit 1", "--max", "40", "--max-failures", "2", "--retry-delay", "10ms"}, want: 1},

		{cmd: "audit", name: "first use", firstUse: true, args: []string{"audit", "{S}"}},
		{cmd: "audit", name: "events", setup: adminReset("--to-seq", "3"), args: []string{"audit", "{S}", "bill", "--action", "reset"}},

		{cmd: "acks ls", name: "ls", setup: consumedFailing, args: []string{"acks", "ls"}},
		{cmd: "acks get", name: "get", setup: consumedFailing, args: []string{"acks", "get", "{S}.bill", "--seq", "1"}},
		{cmd: "acks stats", name: "stats", setup: consumedFailing, args: []string{"acks", "stats"}},
		{cmd: "acks forget", name: "forget", setup: consumedFailing, args: []string{"acks", "forget", "--scope", "{S}.bill", "--all", "--execute", "--yes"}},
		{cmd: "acks compact", name: "compact", setup: consumed, args: []string{"acks", "compact", "--execute", "--yes"}},
		{cmd: "acks retry", name: "retry", setup: consumedFailing, args: []string{"acks", "retry", "--scope", "{S}.bill", "--all-failed", "--exec", "true"}},
	}
}

// freshAcks deletes the ack-record bucket (consume makes it again), so it
// holds only the records of the run's stream.
func (f *permFixture) freshAcks(t *testing.T) {
	t.Helper()
	if err := f.js.DeleteStream(testserver.Context(t, time.Minute), "KV_JSCTL_ACKS"); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatal(err)
	}
}

// delivered delivers the first n messages to bill and acks them.
func delivered(n int) func(t *testing.T, f *permFixture, r *permRun) {
	return func(t *testing.T, f *permFixture, r *permRun) {
		ctx := testserver.Context(t, time.Minute)
		fetchAck(t, ctx, f, r.stream, "bill", n)
	}
}

func fetchAck(t *testing.T, ctx context.Context, f *permFixture, stream, consumer string, n int) {
	t.Helper()
	c, err := f.js.Consumer(ctx, stream, consumer)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Fetch(n, jetstream.FetchMaxWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for m := range b.Messages() {
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
		got++
	}
	if got != n {
		t.Fatalf("fetched %d of %d messages of %s/%s", got, n, stream, consumer)
	}
}

// filtered makes bill take only {s}.eu, with n delivered.
func filtered(n int) func(t *testing.T, f *permFixture, r *permRun) {
	return func(t *testing.T, f *permFixture, r *permRun) {
		ctx := testserver.Context(t, time.Minute)
		if err := f.js.DeleteConsumer(ctx, r.stream, "bill"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.js.CreateConsumer(ctx, r.stream, jetstream.ConsumerConfig{Durable: "bill", AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: strings.ToLower(r.stream) + ".eu"}); err != nil {
			t.Fatal(err)
		}
		fetchAck(t, ctx, f, r.stream, "bill", n)
	}
}

// startAt makes bill start at sequence seq (so a reset below it cannot be
// made in place).
func startAt(seq uint64) func(t *testing.T, f *permFixture, r *permRun) {
	return func(t *testing.T, f *permFixture, r *permRun) {
		ctx := testserver.Context(t, time.Minute)
		if err := f.js.DeleteConsumer(ctx, r.stream, "bill"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.js.CreateConsumer(ctx, r.stream, jetstream.ConsumerConfig{Durable: "bill", AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: seq}); err != nil {
			t.Fatal(err)
		}
	}
}

func paused(t *testing.T, f *permFixture, r *permRun) {
	ctx := testserver.Context(t, time.Minute)
	if _, err := f.js.PauseConsumer(ctx, r.stream, "bill", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
}

func deleteBill(t *testing.T, f *permFixture, r *permRun) {
	ctx := testserver.Context(t, time.Minute)
	if err := f.js.DeleteConsumer(ctx, r.stream, "bill"); err != nil {
		t.Fatal(err)
	}
}

// other adds consumer other, 8 messages ahead.
func other(t *testing.T, f *permFixture, r *permRun) {
	ctx := testserver.Context(t, time.Minute)
	if _, err := f.js.CreateConsumer(ctx, r.stream, jetstream.ConsumerConfig{Durable: "other", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	fetchAck(t, ctx, f, r.stream, "other", 8)
}

func both(a, b func(t *testing.T, f *permFixture, r *permRun)) func(t *testing.T, f *permFixture, r *permRun) {
	return func(t *testing.T, f *permFixture, r *permRun) {
		a(t, f, r)
		b(t, f, r)
	}
}

// adminReset moves bill as the administrator first (delivered 5), so the
// run has a recorded change.
func adminReset(args ...string) func(t *testing.T, f *permFixture, r *permRun) {
	return func(t *testing.T, f *permFixture, r *permRun) {
		delivered(5)(t, f, r)
		f.setupRun(t, append(append([]string{"consumer", "reset", r.stream, "bill"}, args...), "--execute", "--yes")...)
	}
}

// consumed lets consume handle the first 10 messages as the administrator
// (ack records in JSCTL_ACKS).
func consumed(t *testing.T, f *permFixture, r *permRun) {
	f.freshAcks(t)
	f.setupRun(t, "consume", r.stream, "bill", "--exec", "true", "--max", "10")
}

// consumedFailing leaves failed records: consume fails every message once,
// for good (a run as the administrator).
func consumedFailing(t *testing.T, f *permFixture, r *permRun) {
	f.freshAcks(t)
	f.setupRunCode(t, 1, "consume", r.stream, "bill", "--exec", "exit 1", "--max", "4", "--max-failures", "1")
}

// dlStream makes a stream capturing the dead-letter subject.
func dlStream(t *testing.T, f *permFixture, r *permRun) {
	ctx := testserver.Context(t, time.Minute)
	if _, err := f.js.CreateStream(ctx, jetstream.StreamConfig{Name: "DL" + r.stream, Subjects: []string{r.deadLetter()}}); err != nil {
		t.Fatal(err)
	}
}

// snapshot saves s{S} of bill (delivered 5) as the administrator, then
// moves bill on (or deletes it).
func snapshot(deleteIt bool) func(t *testing.T, f *permFixture, r *permRun) {
	return func(t *testing.T, f *permFixture, r *permRun) {
		delivered(5)(t, f, r)
		f.setupRun(t, "consumer", "snapshot", "save", "s"+r.stream, r.stream, "bill")
		delivered(3)(t, f, r)
		if deleteIt {
			deleteBill(t, f, r)
		}
	}
}

// replica makes {R}, a mirror of {S}, holding all of it, and delivers 5
// to bill.
func replica(t *testing.T, f *permFixture, r *permRun) {
	ctx := testserver.Context(t, time.Minute)
	if _, err := f.js.CreateStream(ctx, jetstream.StreamConfig{Name: r.replica(), Mirror: &jetstream.StreamSource{Name: r.stream}, AllowDirect: r.direct}); err != nil {
		t.Fatal(err)
	}
	testserver.WaitFor(t, time.Minute, "the mirror to hold the stream", func() bool {
		s, err := f.js.Stream(ctx, r.replica())
		return err == nil && s.CachedInfo().State.Msgs == 20
	})
	delivered(5)(t, f, r)
}

// intent leaves an unfinished change of bill (delivered 5).
func intent(spec intentSpec) func(t *testing.T, f *permFixture, r *permRun) {
	return func(t *testing.T, f *permFixture, r *permRun) {
		delivered(5)(t, f, r)
		spec.stream, spec.consumer, spec.id = r.stream, "bill", "c"+strings.ToLower(r.stream)
		if err := writeIntent(testserver.Context(t, time.Minute), f.nc, f.js, spec); err != nil {
			t.Fatal(err)
		}
	}
}
