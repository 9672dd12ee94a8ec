package positions

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/nats-io/nats.go/jetstream"
)

// TestSnapshotNameIsItsKey: a document stored under key "nightly" that
// names itself "pre-deploy" is read, listed and restored as "nightly"
// (its key), and the name it gives itself is reported; the real
// "pre-deploy" is listed once.
func TestSnapshotNameIsItsKey(t *testing.T) {
	ctx, js := setup(t, 20)
	if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	fetch(t, ctx, js, "billing", 4, 5*time.Second)
	snap, err := Save(ctx, js, "pre-deploy", "", Selection{Stream: "ORDERS", All: true}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(snap)
	kv, err := js.KeyValue(ctx, Bucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "nightly", b); err != nil {
		t.Fatal(err)
	}
	got, err := Get(ctx, js, "nightly", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "nightly" || got.NamedAs != "pre-deploy" || !strings.Contains(got.NameWarning(Bucket), `snapshot "nightly" in bucket JSCTL_SNAPSHOTS names itself "pre-deploy": it is listed, shown and restored as "nightly"`) {
		t.Fatalf("got %q named as %q: %s", got.Name, got.NamedAs, got.NameWarning(Bucket))
	}
	list, bad, err := ListChecked(ctx, js, "", Options{})
	if err != nil || len(bad) != 0 || len(list) != 2 {
		t.Fatalf("list %d, bad %v: %v", len(list), bad, err)
	}
	names := map[string]int{}
	for _, s := range list {
		names[s.Name]++
	}
	if names["nightly"] != 1 || names["pre-deploy"] != 1 {
		t.Fatalf("listed %v; want nightly and pre-deploy once each", names)
	}
	plans, err := PlanRestore(ctx, js, got, nil, reset.Options{})
	if err != nil || plans[0].Target.Snapshot != "nightly" {
		t.Fatalf("restore plan of %v: %v", plans[0].Target, err)
	}
	if own, _ := Get(ctx, js, "pre-deploy", Options{}); own.NamedAs != "" || own.NameWarning(Bucket) != "" {
		t.Fatalf("the real one is reported: %q", own.NameWarning(Bucket))
	}
}

// TestSnapshotValuesChecked: a stored or exported document holding values
// no snapshot has is refused (bad input) naming them, and a listing
// reports it by its key and skips it: times in the future (a forged floor
// time decides where --by-time restores), a position past the largest
// sequence (its next delivery would wrap to 0), a saved configuration
// with a deliver subject of the server's API.
func TestSnapshotValuesChecked(t *testing.T) {
	ctx, js := setup(t, 20)
	if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	fetch(t, ctx, js, "billing", 4, 5*time.Second)
	snap, err := Save(ctx, js, "good", "", Selection{Stream: "ORDERS", All: true}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(snap)
	kv, err := js.KeyValue(ctx, Bucket)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		mutate func(doc *Snapshot)
		want   string
	}{
		{"taken in the future", func(d *Snapshot) { d.Created = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC) }, `: its time taken 2200-01-01T00:00:00Z lies in the future`},
		{"floor time in the future", func(d *Snapshot) {
			future := time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
			d.Streams[0].Consumers[0].AckFloor.Time = &future
		}, `, consumer "billing" on stream "ORDERS": its ack floor time 2200-01-01T00:00:00Z lies in the future`},
		{"floor past the largest sequence", func(d *Snapshot) { d.Streams[0].Consumers[0].AckFloor.StreamSeq = math.MaxUint64 }, "its ack floor is past the largest sequence"},
		{"deliver subject of the server's API", func(d *Snapshot) {
			d.Streams[0].Consumers[0].Config = json.RawMessage(`{"durable_name":"billing","ack_policy":"explicit","deliver_subject":"$JS.API.STREAM.DELETE.ORDERS"}`)
		}, `deliver subject "$JS.API.STREAM.DELETE.ORDERS" is a subject of the server's own API`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var d Snapshot
			if err := json.Unmarshal(b, &d); err != nil {
				t.Fatal(err)
			}
			d.Name = "bad"
			tc.mutate(&d)
			doc, _ := json.Marshal(&d)
			if _, err := Decode("bad.json", doc); !errors.Is(err, jsutil.ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("decode: %v; want %q", err, tc.want)
			}
			if _, err := kv.Put(ctx, "bad", doc); err != nil {
				t.Fatal(err)
			}
			if _, err := Get(ctx, js, "bad", Options{}); !errors.Is(err, jsutil.ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("get: %v; want %q", err, tc.want)
			}
			list, bad, err := ListChecked(ctx, js, "", Options{})
			if err != nil || len(list) != 1 || list[0].Name != "good" || len(bad) != 1 || bad[0].Key != "bad" {
				t.Fatalf("list %d, bad %+v: %v; want good listed and bad reported", len(list), bad, err)
			}
		})
	}
}

// TestCompareWarnsRecreatedConsumer: a consumer deleted and added again
// since the snapshot is shown with a warning naming both creation times,
// and the restore plan moves it all the same with the same warning.
func TestCompareWarnsRecreatedConsumer(t *testing.T) {
	ctx, js := setup(t, 20)
	cfg := jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy}
	if _, err := js.CreateConsumer(ctx, "ORDERS", cfg); err != nil {
		t.Fatal(err)
	}
	fetch(t, ctx, js, "billing", 4, 5*time.Second)
	snap, err := Save(ctx, js, "s", "", Selection{Stream: "ORDERS", All: true}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteConsumer(ctx, "ORDERS", "billing"); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateConsumer(ctx, "ORDERS", cfg); err != nil {
		t.Fatal(err)
	}
	want := `consumer "billing" on "ORDERS" was deleted and created again since the `
	cmps, err := Compare(ctx, js, snap, Options{})
	if err != nil || len(cmps) != 1 || !strings.Contains(strings.Join(cmps[0].Warnings, "\n"), want+"snapshot (created "+snap.Streams[0].Consumers[0].Created.Format(time.RFC3339Nano)) {
		t.Fatalf("compare %+v: %v", cmps, err)
	}
	plans, err := PlanRestore(ctx, js, snap, nil, reset.Options{})
	if err != nil || !strings.Contains(strings.Join(plans[0].Changes[0].Warnings, "\n"), want+"position was saved") {
		t.Fatalf("restore plan %+v: %v", plans[0].Changes[0].Warnings, err)
	}
}

// TestRemoveUnreadable: rm is the way to remove a document that does not
// parse or holds values no snapshot may (ls reports and skips them): it
// removes it without reading it; a name with nothing under it is not
// found.
func TestRemoveUnreadable(t *testing.T) {
	ctx, js := setup(t, 2)
	if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	if _, err := Save(ctx, js, "kept", "", Selection{Stream: "ORDERS", All: true}, Options{}); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, Bucket)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{`garbage{{`, `{"version":99,"name":"broken"}`} {
		if _, err := kv.Put(ctx, "broken", []byte(bad)); err != nil {
			t.Fatal(err)
		}
		if _, err := Get(ctx, js, "broken", Options{}); err == nil {
			t.Fatalf("%s reads as a snapshot", bad)
		}
		if err := Remove(ctx, js, "broken", Options{}); err != nil {
			t.Fatalf("remove %s: %v", bad, err)
		}
		if _, err := kv.Get(ctx, "broken"); !errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Fatalf("after rm, the key holds something: %v", err)
		}
	}
	if err := Remove(ctx, js, "broken", Options{}); !errors.Is(err, jsutil.ErrNotFound) {
		t.Fatalf("rm of a removed name: %v, want not found", err)
	}
	if _, err := Get(ctx, js, "kept", Options{}); err != nil {
		t.Fatalf("the other snapshot: %v", err)
	}
}
