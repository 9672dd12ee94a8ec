package commands_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/commands"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// deniedServer is a server whose only user may not publish to deny; it
// holds stream ORDERS with a few messages on two subjects.
func deniedServer(t *testing.T, deny ...string) string {
	t.Helper()
	s, err := testserver.NewAuth(t.TempDir(), "DENIED", testserver.Auth{User: "u", Password: "pw", Deny: deny})
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
	ctx := testserver.Context(t, 30*time.Second)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	for _, subj := range []string{"orders.eu", "orders.us", "orders.eu"} {
		if _, err := js.Publish(ctx, subj, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	return s.URL
}

func runJSCTL(t *testing.T, args ...string) (int, string, string, time.Duration) {
	t.Helper()
	var out, errb bytes.Buffer
	start := time.Now()
	code := commands.Run(context.Background(), args, strings.NewReader(""), &out, &errb, false)
	return code, out.String(), errb.String(), time.Since(start)
}

// TestSeekDeniedOnce: a seek the permissions refuse is reported after one
// --timeout, not two (the request the server dropped is not sent again),
// naming the refused operation and its object.
func TestSeekDeniedOnce(t *testing.T) {
	url := deniedServer(t, "$JS.API.STREAM.MSG.GET.>", "$JS.API.STREAM.INFO.>")
	const timeout = 2 * time.Second
	code, _, stderr, took := runJSCTL(t, "-s", url, "--user", "u", "--password", "pw", "--timeout", timeout.String(), "seek", "ORDERS", "now")
	if code != commands.ExitPermission {
		t.Fatalf("exit %d, want %d: %s", code, commands.ExitPermission, stderr)
	}
	if took >= 2*timeout { // sent twice, it takes two timeouts at least
		t.Errorf("a denied seek took %s with --timeout %s: the refused request was sent again", took, timeout)
	}
	if !strings.Contains(stderr, `seek stream "ORDERS": permission denied: this user may not `) ||
		!(strings.Contains(stderr, `may not read stream "ORDERS"`) || strings.Contains(stderr, `may not get messages of stream "ORDERS"`)) {
		t.Errorf("stderr %q does not name the refused operation and the stream", stderr)
	}
}

// TestTimelineDeniedNamesOperation: when creating the timeline's temporary
// counting consumer is refused, the error says so in words (create a
// temporary consumer on stream "ORDERS"), not only by the consumer's
// generated subject.
func TestTimelineDeniedNamesOperation(t *testing.T) {
	url := deniedServer(t, "$JS.API.CONSUMER.CREATE.>")
	code, _, stderr, _ := runJSCTL(t, "-s", url, "--user", "u", "--password", "pw", "--timeout", "1s",
		"stream", "timeline", "ORDERS", "--subject", "orders.us", "--buckets", "2")
	if code != commands.ExitPermission {
		t.Fatalf("exit %d, want %d: %s", code, commands.ExitPermission, stderr)
	}
	if !strings.Contains(stderr, `permission denied: this user may not create a temporary consumer on stream "ORDERS" (the server refused a publish to "$JS.API.CONSUMER.CREATE.ORDERS.jsctl_tmp_`) {
		t.Errorf("stderr %q does not name the refused operation", stderr)
	}
}

// TestConsumeDenied: a consume whose permissions the server refuses (a
// write of ack records, a pull from the consumer) ends with exit 7 naming
// what was refused, instead of naking the same messages forever or
// reporting "processed 0".
func TestConsumeDenied(t *testing.T) {
	for _, tc := range []struct{ deny, want string }{
		{"$KV.JSCTL_ACKS.>", `may not write ack records to bucket "JSCTL_ACKS"`},
		{"$JS.API.CONSUMER.MSG.NEXT.>", `may not fetch from consumer "c" of stream "ORDERS"`},
	} {
		t.Run(tc.deny, func(t *testing.T) {
			url := deniedServer(t, tc.deny)
			js := connectDenied(t, url)
			ctx := testserver.Context(t, 30*time.Second)
			if _, err := js.CreateOrUpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr, _ := runJSCTL(t, "-s", url, "--user", "u", "--password", "pw", "--timeout", "2s",
				"consume", "ORDERS", "c", "--exec", "true", "--idle", "5s", "--retry-delay", "100ms")
			if code != commands.ExitPermission || !strings.Contains(stderr, "permission denied") || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, want %d naming the refusal (%s)\nstdout: %s\nstderr: %s", code, commands.ExitPermission, tc.want, stdout, stderr)
			}
		})
	}
}

// TestAcksListDenied: listing ack records when the server refuses the
// listing's consumer is exit 7 naming the bucket after --timeout, not a
// hang.
func TestAcksListDenied(t *testing.T) {
	url := deniedServer(t, "$JS.API.CONSUMER.CREATE.KV_JSCTL_ACKS.>")
	js := connectDenied(t, url)
	ctx := testserver.Context(t, 30*time.Second)
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "JSCTL_ACKS", LimitMarkerTTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr, took := runJSCTL(t, "-s", url, "--user", "u", "--password", "pw", "--timeout", "2s", "acks", "ls")
	if code != commands.ExitPermission || !strings.Contains(stderr, "KV_JSCTL_ACKS") {
		t.Fatalf("exit %d, want %d naming the bucket\nstdout: %s\nstderr: %s", code, commands.ExitPermission, stdout, stderr)
	}
	// nats.go waits five seconds for the creation of a watch's consumer,
	// whatever the JetStream handle's timeout; jsctl waits --timeout.
	if took >= 5*time.Second {
		t.Errorf("acks ls took %s with --timeout 2s: it waited out nats.go's own five seconds", took)
	}
}

// connectDenied connects to a deniedServer as its user.
func connectDenied(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url, nats.UserInfo("u", "pw"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}
