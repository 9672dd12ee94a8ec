package positions

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/nats-io/nats.go/jetstream"
)

// TestTamperedSnapshotShown: someone with write access to the snapshot
// bucket adds deliver_subject "tap.x" and ack_policy "none" to a saved
// configuration. show and the restore plan (which creates the deleted
// consumer from it) list both fields against the server's defaults, as
// warnings.
func TestTamperedSnapshotShown(t *testing.T) {
	ctx, js := setup(t, 20)
	if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	fetch(t, ctx, js, "billing", 4, 5*time.Second)
	if _, err := Save(ctx, js, "before", "", Selection{Stream: "ORDERS", All: true}, Options{}); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, Bucket)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, "before")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(e.Value(), &doc); err != nil {
		t.Fatal(err)
	}
	cfg := doc["streams"].([]any)[0].(map[string]any)["consumers"].([]any)[0].(map[string]any)["config"].(map[string]any)
	cfg["deliver_subject"], cfg["ack_policy"] = "tap.x", "none"
	b, _ := json.Marshal(doc)
	if _, err := kv.Put(ctx, "before", b); err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteConsumer(ctx, "ORDERS", "billing"); err != nil {
		t.Fatal(err)
	}
	snap, err := Get(ctx, js, "before", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []reset.ConfigField{
		{Field: "ack_policy", From: json.RawMessage(`"explicit"`), To: json.RawMessage(`"none"`), Warning: `ack_policy: "explicit" -> "none": changes whether messages are acknowledged`},
		{Field: "deliver_subject", From: json.RawMessage(`null`), To: json.RawMessage(`"tap.x"`), Warning: `deliver_subject: unset -> "tap.x": changes where messages go (a push subject)`},
	}
	wantWarnings := []string{
		"saved configuration against the server's defaults: " + want[0].Warning,
		"saved configuration against the server's defaults: " + want[1].Warning,
	}
	cmps, err := Compare(ctx, js, snap, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cmps) != 1 || !reflect.DeepEqual(cmps[0].ConfigDiff, want) {
		t.Fatalf("show: config diff %s, want %s", jsonText(cmps[0].ConfigDiff), jsonText(want))
	}
	if w := cmps[0].Warnings; len(w) != 3 || w[1] != wantWarnings[0] || w[2] != wantWarnings[1] {
		t.Fatalf("show: warnings %q, want the deleted consumer and %q", w, wantWarnings)
	}
	plans, err := PlanRestore(ctx, js, snap, nil, reset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := plans[0].Changes[0]
	if c.Method != reset.Create || !reflect.DeepEqual(c.ConfigDiff, want) {
		t.Fatalf("restore plan: %s with config diff %s, want create with %s", c.Method, jsonText(c.ConfigDiff), jsonText(want))
	}
	if !reflect.DeepEqual(c.Warnings, wantWarnings) {
		t.Fatalf("restore plan warnings %q, want %q", c.Warnings, wantWarnings)
	}
}

// TestRestoreOldSnapshotRecreatedStream: a snapshot of an older jsctl (no
// stream creation time) restored into a stream deleted and created again:
// the message at the saved ack floor has another time now, so the restore
// is refused; --by-time restores by the saved time.
func TestRestoreOldSnapshotRecreatedStream(t *testing.T) {
	ctx, js := setup(t, 8)
	if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	fetch(t, ctx, js, "billing", 5, 5*time.Second)
	snap, err := Take(ctx, js, "old", "", Selection{Stream: "ORDERS", All: true}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Streams[0].Created == nil {
		t.Fatal("the snapshot does not record the stream's creation time")
	}
	snap.Streams[0].Created = nil // as an older jsctl saved it
	if err := js.DeleteStream(ctx, "ORDERS"); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 10; i++ {
		if _, err := js.Publish(ctx, "orders.eu", fmt.Appendf(nil, "n%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	plans, err := PlanRestore(ctx, js, snap, nil, reset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = plans[0].Err()
	if !errors.Is(err, jsutil.ErrConflict) || !strings.Contains(err.Error(), "at sequence 5 now, not the saved one of "+snap.Streams[0].Consumers[0].AckFloor.Time.UTC().Format(time.RFC3339Nano)) {
		t.Fatalf("restore: %v; want a conflict naming sequence 5 and its saved time", err)
	}
	plans, err = PlanRestore(ctx, js, snap, nil, reset.Options{ByTime: true})
	if err != nil {
		t.Fatal(err)
	}
	c := plans[0].Changes[0]
	if err := plans[0].Err(); err != nil || !c.ByTime || c.To.Sequence != 1 {
		t.Fatalf("restore --by-time: %v, by time %v, to %d; want by time to 1", err, c.ByTime, c.To.Sequence)
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
