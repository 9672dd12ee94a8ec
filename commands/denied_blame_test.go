package commands_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestSnapshotSaveBlamesRefusedSubject (issue 17, item 7): a user who may
// neither write the snapshot bucket nor delete consumers gets, from
// snapshot save, the denial of the write that blocked it, not of the
// delete of the watch consumer that read the ack records (refused first,
// and harmless: the server removes it).
func TestSnapshotSaveBlamesRefusedSubject(t *testing.T) {
	url := deniedServer(t, "$KV.JSCTL_SNAPSHOTS.>", "$JS.API.CONSUMER.DELETE.>")
	nc, err := nats.Connect(url, nats.UserInfo("u", "pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testserver.Context(t, 30*time.Second)
	if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: "orders.eu"}); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"JSCTL_ACKS"} {
		kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: b, LimitMarkerTTL: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.PutString(ctx, "ORDERS.billing", "{}"); err != nil {
			t.Fatal(err)
		}
	}
	code, out, stderr, took := runJSCTL(t, "-s", url, "--user", "u", "--password", "pw", "--timeout", "1s",
		"consumer", "snapshot", "save", "s1", "ORDERS", "--all")
	// The save reads the ack bucket with two watches. nats.go ends a watch
	// by deleting its consumer and waits five seconds, whatever --timeout
	// says, for an answer this user never gets: jsctl does not wait for it.
	if took >= 5*time.Second {
		t.Errorf("snapshot save took %s with --timeout 1s: it waited for the refused deletes of its watches", took)
	}
	// The document's size varies with its time stamp.
	want := regexp.MustCompile(`^jsctl: error: store snapshot "s1" in bucket "JSCTL_SNAPSHOTS" \(\d+ bytes\): permission denied: this user may not write key "s1" of bucket "JSCTL_SNAPSHOTS" \(the server refused a publish to "\$KV\.JSCTL_SNAPSHOTS\.s1"\)\n$`)
	if code != 7 || out != "" || !want.MatchString(stderr) {
		t.Errorf("snapshot save: exit %d, stdout %q, stderr:\n%s\nwant exit 7 and:\n%s", code, out, stderr, want)
	}
}
