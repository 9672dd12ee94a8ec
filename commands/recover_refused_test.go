package commands_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/commands"
	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestRecoverRefusedMoveOneOutcome (issue 27: recover said both "could not
// find out whether the move was applied" and "(nothing changed):
// permission denied"): recovering an in-place reset whose consumer went
// missing creates the consumer again and then moves it; a user refused the
// move gets one outcome: the move was refused after the create, the change
// is unfinished, naming the refused operation and its subject.
func TestRecoverRefusedMoveOneOutcome(t *testing.T) {
	s, err := testserver.NewAuth(t.TempDir(), "RECOVER", testserver.Auth{User: "u", Password: "pw", Deny: []string{"$JS.API.CONSUMER.RESET.>"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	nc, err := nats.Connect(s.URL, nats.UserInfo("u", "pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testserver.Context(t, time.Minute)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORD", Subjects: []string{"ord.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, err := js.Publish(ctx, "ord.eu", nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := js.CreateConsumer(ctx, "ORD", jetstream.ConsumerConfig{Durable: "bill", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	if err := writeIntent(ctx, nc, js, intentSpec{stream: "ORD", consumer: "bill", seq: 3, method: reset.Reset, id: "abc1", deleteConsumer: true}); err != nil {
		t.Fatal(err)
	}
	code, out, stderr, _ := runJSCTL(t, "-s", s.URL, "--user", "u", "--password", "pw", "--timeout", "5s", "consumer", "recover", "ORD", "bill", "--execute")
	if code != commands.ExitPermission {
		t.Errorf("exit %d, want %d", code, commands.ExitPermission)
	}
	for _, bad := range []string{"could not find out", "nothing changed"} {
		if strings.Contains(stderr, bad) {
			t.Errorf("the error claims %q though the move was refused after the create:\n%s", bad, stderr)
		}
	}
	if !strings.Contains(stderr, `may not reset consumer "bill" of stream "ORD" (the server refused a publish to "$JS.API.CONSUMER.RESET.ORD.bill")`) ||
		!strings.Contains(stderr, "was refused") || !strings.Contains(stderr, "jsctl consumer recover ORD bill --execute") {
		t.Errorf("the error does not name the refused move, its subject and what finishes the change:\nstdout:\n%s\nstderr:\n%s", out, stderr)
	}
}

// TestRestoreBlamesRefusedRequest (issue 27: snapshot restore said "may not
// get messages of stream ORD ($JS.API.DIRECT.GET.ORD)" while opening the
// ack bucket): a direct get refused and read by message get instead is
// never blamed for a later refusal; the error names the request that was
// refused (reading the ack bucket's stream).
func TestRestoreBlamesRefusedRequest(t *testing.T) {
	t.Parallel() // mostly waits on a server process
	s := natsproc.Start(t, natsproc.Options{Config: `authorization {
  users = [
    {user: admin, password: pw}
    {user: u, password: pw, permissions: {publish: {deny: ["$JS.API.DIRECT.GET.ORD", "$JS.API.STREAM.INFO.KV_JSCTL_ACKS"]}}}
  ]
}`})
	nc, err := nats.Connect(s.URL(), nats.UserInfo("admin", "pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testserver.Context(t, time.Minute)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORD", Subjects: []string{"ord.>"}, AllowDirect: true}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, err := js.Publish(ctx, "ord.eu", nil); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := js.CreateConsumer(ctx, "ORD", jetstream.ConsumerConfig{Durable: "bill", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	if err := testserver.Take(cons, 2, 10*time.Second, func(m jetstream.Msg) error { return m.DoubleAck(ctx) }); err != nil {
		t.Fatal(err)
	}
	as := func(user string, args ...string) (int, string, string) {
		code, out, stderr, _ := runJSCTL(t, append([]string{"-s", s.URL(), "--user", user, "--password", "pw", "--timeout", "3s"}, args...)...)
		return code, out, stderr
	}
	if code, _, stderr := as("admin", "consumer", "snapshot", "save", "s0", "ORD", "bill"); code != 0 {
		t.Fatalf("save: exit %d: %s", code, stderr)
	}
	if err := js.DeleteConsumer(ctx, "ORD", "bill"); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := as("u", "consumer", "snapshot", "restore", "s0", "--execute", "--forget-acks")
	_, errLine, _ := strings.Cut(stderr, "jsctl: error: ")
	if code != commands.ExitPermission || strings.Contains(errLine, "DIRECT.GET") || !strings.Contains(errLine, `"$JS.API.STREAM.INFO.KV_JSCTL_ACKS"`) {
		t.Errorf("restore: exit %d (want %d), naming the refused read of the ack bucket's stream and no direct get:\nstdout:\n%s\nstderr:\n%s", code, commands.ExitPermission, out, stderr)
	}
}
