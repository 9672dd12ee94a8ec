package commands_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestPlanCountsUnknown (issue 27, "a figure is known or it is unknown"):
// a reset plan whose message counts cannot be made (the direct get and the
// temporary counting consumer both refused) shows redeliver and skip as
// null in JSON and "unknown" in text, with a warning naming the refused
// subject, instead of an upper bound shown as the count; a user who may
// count gets the numbers. Neither waits on the refused requests.
func TestPlanCountsUnknown(t *testing.T) {
	const timeout = 10 * time.Second
	run := func(url string, args ...string) (int, string, string, time.Duration) {
		return runJSCTL(t, append([]string{"-s", url, "--user", "u", "--password", "pw", "--timeout", timeout.String(),
			"consumer", "reset", "ORD", "bill", "--to-seq", "3"}, args...)...)
	}
	// bill takes ord.eu (sequences 11 to 28), delivered and acked 11:
	// moving it to 3 redelivers 11, one message.
	known := countsServer(t, "")
	code, out, stderr, _ := run(known, "--json")
	mustExit(t, code, 0, stderr)
	if v := jsonAt(t, out, "changes", "0", "redeliver"); v != 1.0 {
		t.Errorf("redeliver %v, want 1", v)
	}
	if v := jsonAt(t, out, "changes", "0", "skip"); v != 0.0 {
		t.Errorf("skip %v, want 0", v)
	}
	refused := `"$JS.API.CONSUMER.CREATE.ORD.`
	url := countsServer(t, `"$JS.API.DIRECT.GET.ORD", "$JS.API.DIRECT.GET.ORD.>", "$JS.API.CONSUMER.CREATE.ORD.>"`)
	code, out, stderr, took := run(url, "--json")
	mustExit(t, code, 0, stderr)
	mustNull(t, out, "changes", "0", "redeliver")
	if v := jsonAt(t, out, "changes", "0", "skip"); v != 0.0 {
		t.Errorf("skip %v, want 0 (a move back skips nothing: no count needed)", v)
	}
	if !strings.Contains(out, "unknown") || !strings.Contains(out, strings.ReplaceAll(refused, `"`, `\"`)) {
		t.Errorf("no warning that the count is unknown naming %s: %s", refused, out)
	}
	if took >= timeout {
		t.Errorf("the plan took %s with --timeout %s: it waited on a refused request", took, timeout)
	}
	code, out, stderr, _ = run(url)
	mustExit(t, code, 0, stderr)
	var row string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "bill ") {
			row = line
		}
	}
	if f := strings.Fields(row); len(f) < 8 || !strings.Contains(row, "unknown") {
		t.Errorf("the plan's row does not say the count is unknown: %q\n%s", row, out)
	}
}

// countsServer is a nats-server process with an administrator and user u,
// refused deny (quoted subjects, comma separated); stream ORD
// (allow_direct) holds 10 messages on ord.us, then 18 on ord.eu, and
// consumer bill takes ord.eu, its first message delivered and acked.
func countsServer(t *testing.T, deny string) string {
	t.Helper()
	perm := ""
	if deny != "" {
		perm = ", permissions: {publish: {deny: [" + deny + "]}}"
	}
	s := natsproc.Start(t, natsproc.Options{Config: `authorization {
  users = [
    {user: admin, password: pw}
    {user: u, password: pw` + perm + `}
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
	for i := 0; i < 28; i++ {
		subj := "ord.eu"
		if i < 10 {
			subj = "ord.us"
		}
		if _, err := js.Publish(ctx, subj, nil); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := js.CreateConsumer(ctx, "ORD", jetstream.ConsumerConfig{Durable: "bill", AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: "ord.eu"})
	if err != nil {
		t.Fatal(err)
	}
	if err := testserver.Take(cons, 1, 10*time.Second, func(m jetstream.Msg) error { return m.DoubleAck(ctx) }); err != nil {
		t.Fatal(err)
	}
	return s.URL()
}
