package chaos

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/nats-io/nats.go/jetstream"
)

// TestCopyToReplicasOneServer: one nats-server process with an origin
// ORDERS, a mirror of it, a stream sourcing it and a second origin OTHER
// (interleaved, so sequences differ), a source filtered to orders.eu and a
// source with a subject transform (orders.> to xf.orders.>). Consumers at
// random ack floors on ORDERS are copied with consumer copy --execute (25
// random positions per replica, 100 in all), and a plain nats.go client
// checks that the first message each copy delivers came from the right
// origin sequence (the mirror's own sequence, else the Nats-Stream-Source
// header). Then: a copy to a source that stopped receiving (full, discard
// new) is refused with exit 5,
// jsctl killed (kill -9) at random change requests during copies is
// finished by consumer recover, and a snapshot saved on the origin is
// restored on the sourcing stream.
func TestCopyToReplicasOneServer(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	if testing.Short() {
		t.Skip("chaos suite: runs real processes")
	}
	srv := natsproc.Start(t, natsproc.Options{})
	seed := uint64(time.Now().UnixNano())
	r := &replicas{t: t, rng: rand.New(rand.NewPCG(seed, 21)), home: t.TempDir(), originURL: srv.URL(), apiPrefix: "$JS.API"}
	r.onc, r.ojs = connectJS(t, srv.URL(), "")
	r.tnc, r.tjs = r.onc, r.ojs
	r.toGlobal = nil
	ctx := ctxFor(t)
	mustStream(t, r.ojs, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	mustStream(t, r.ojs, jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"other.>"}})
	mustStream(t, r.ojs, jetstream.StreamConfig{Name: "ORDERS_M", Mirror: &jetstream.StreamSource{Name: "ORDERS"}})
	mustStream(t, r.ojs, jetstream.StreamConfig{Name: "ALL", Sources: []*jetstream.StreamSource{{Name: "ORDERS"}, {Name: "OTHER"}}})
	mustStream(t, r.ojs, jetstream.StreamConfig{Name: "EU", Sources: []*jetstream.StreamSource{{Name: "ORDERS", FilterSubject: "orders.eu"}}})
	mustStream(t, r.ojs, jetstream.StreamConfig{Name: "XF", Sources: []*jetstream.StreamSource{{Name: "ORDERS",
		SubjectTransforms: []jetstream.SubjectTransformConfig{{Source: "orders.>", Destination: "xf.orders.>"}}}}})
	// LAG holds 300 messages at most and refuses more (discard new): it
	// stops copying once the origin has more.
	mustStream(t, r.ojs, jetstream.StreamConfig{Name: "LAG", Sources: []*jetstream.StreamSource{{Name: "ORDERS"}}, MaxMsgs: 300, Discard: jetstream.DiscardNew})
	r.publish(300, true)
	eu := func(s string) bool { return s == "orders.eu" }
	targets := []target{
		{stream: "ORDERS_M", mirror: true, holds: all, subject: same, filters: []string{"", "orders.eu", "orders.us"}},
		{stream: "EU", holds: eu, subject: same, filters: []string{"", "orders.eu"}},
		{stream: "XF", holds: all, subject: func(s string) string { return "xf." + s }, filters: []string{"", "orders.eu", "orders.us"}},
		{stream: "ALL", holds: all, subject: same, filters: []string{"", "orders.eu", "orders.us"}},
	}
	others, err := r.ojs.Stream(ctx, "OTHER")
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range targets {
		n := r.count(tg)
		if tg.stream == "ALL" {
			n += others.CachedInfo().State.Msgs
		}
		r.waitHolds(tg.stream, n)
	}
	r.waitHolds("LAG", uint64(len(r.msgs)))
	for _, tg := range targets {
		r.rounds(tg, 1, 25)
	}
	positions := r.f.positions

	r.killCopies(targets[3], killTries, 4)
	r.restoreSnapshot(targets[3])

	// The origin gets 10 more messages, which LAG cannot take.
	lag := targets[3]
	lag.stream = "LAG"
	r.publish(10, false)
	r.refusesLag(lag, 10)

	t.Logf("seed %d", seed)
	t.Logf("SUMMARY consumer copy on one server (mirror, source with a second origin, filtered source, transformed source): positions tried %d (random positions %d, in kill tries and snapshot restores %d), exact %d, by-time %d, wrong %d; lag refused %d; kill -9 tries %d (killed %d, changes interrupted and recovered %d, lost %d)",
		r.f.positions, positions, r.f.positions-positions, r.f.exact, r.f.byTime, r.f.wrong, r.f.refused, killTries, r.f.kills, r.f.interrupted, r.f.lost)
	if r.f.interrupted == 0 {
		t.Errorf("no kill interrupted a change: the kill test showed nothing")
	}
}

// TestCopyToLeafMirror: a hub with JetStream domain "hub" and a leaf node
// with domain "leaf" mirroring the hub's ORDERS. Consumers at random ack
// floors on the hub are copied to the leaf's mirror through the hub's
// connection (--to-js-domain leaf): 100 random positions, each checked
// with a plain client of the leaf. Then kill -9 during copies and recover
// (on the leaf, through the hub with --js-domain leaf), a snapshot saved on
// the hub restored on the leaf, and, with the leaf cut off from the hub
// while the hub takes 10 more messages, a copy refused with exit 5 through
// a connection to the leaf itself (--to-server). Last, with the hub killed
// too, a snapshot exported before is restored on the leaf from its file.
func TestCopyToLeafMirror(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	if testing.Short() {
		t.Skip("chaos suite: runs real processes")
	}
	hub, leaf := natsproc.StartHubLeaf(t, "hub", "leaf")
	seed := uint64(time.Now().UnixNano())
	r := &replicas{t: t, rng: rand.New(rand.NewPCG(seed, 22)), home: t.TempDir(), originURL: hub.URL(), apiPrefix: "$JS.leaf.API"}
	r.onc, r.ojs = connectJS(t, hub.URL(), "")
	r.tnc, r.tjs = connectJS(t, leaf.URL(), "")
	r.to = []string{"--to-js-domain", "leaf"}
	r.toGlobal = []string{"--js-domain", "leaf"}
	mustStream(t, r.ojs, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	mustStream(t, r.tjs, jetstream.StreamConfig{Name: "ORDERS_L", Mirror: &jetstream.StreamSource{Name: "ORDERS", Domain: "hub"}})
	r.publish(300, false)
	tg := target{stream: "ORDERS_L", mirror: true, holds: all, subject: same, filters: []string{"", "orders.eu", "orders.us"}}
	r.waitHolds(tg.stream, uint64(len(r.msgs)))
	r.rounds(tg, 4, 25)
	positions := r.f.positions

	r.killCopies(tg, killTries, 4)
	r.restoreSnapshot(tg)

	natsproc.CutLeaf(leaf)
	r.publish(10, false)
	r.refusesLag(tg, 10, "--to-server", leaf.URL())

	// The hub is lost (the leaf still cut off): a snapshot exported before
	// is restored on the leaf from the file, translated from the leaf's
	// records alone, at positions the leaf holds.
	r.restoreLost(tg, hub, leaf.URL(), len(r.msgs)-22)

	t.Logf("seed %d", seed)
	t.Logf("SUMMARY consumer copy hub (domain hub) to leaf mirror (domain leaf): positions tried %d (random positions %d, in kill tries and snapshot restores %d), exact %d, by-time %d, wrong %d; lag refused %d; kill -9 tries %d (killed %d, changes interrupted and recovered %d, lost %d)",
		r.f.positions, positions, r.f.positions-positions, r.f.exact, r.f.byTime, r.f.wrong, r.f.refused, killTries, r.f.kills, r.f.interrupted, r.f.lost)
	if r.f.interrupted == 0 {
		t.Errorf("no kill interrupted a change: the kill test showed nothing")
	}
}

// killTries is how many copies each test kills.
const killTries = 4

func mustStream(t *testing.T, js jetstream.JetStream, cfg jetstream.StreamConfig) {
	t.Helper()
	if _, err := js.CreateStream(ctxFor(t), cfg); err != nil {
		t.Fatalf("create stream %s: %v", cfg.Name, err)
	}
}

// restoreSnapshot saves a snapshot of four new origin consumers, moves
// them on the origin (the snapshot, not the consumers now, must count),
// restores it onto tg, and checks the first message of each.
func (r *replicas) restoreSnapshot(tg target) {
	r.t.Helper()
	want := map[string]uint64{}
	var names []string
	for j := 0; j < 4; j++ {
		name, from := r.originConsumer(tg.filters, len(r.msgs)-12)
		want[name] = from
		names = append(names, name)
	}
	snap := fmt.Sprintf("pre-%s", strings.ToLower(tg.stream))
	if code, out, errs := r.jsctl(append([]string{"consumer", "snapshot", "save", snap, "ORDERS"}, names...)...); code != 0 {
		r.t.Fatalf("snapshot save exited %d:\n%s\n%s", code, out, errs)
	}
	for _, n := range names {
		if _, err := r.onc.Request("$JS.API.CONSUMER.RESET.ORDERS."+n, []byte(`{"seq":1}`), 10*time.Second); err != nil {
			r.t.Fatal(err)
		}
	}
	code, out, errs := r.jsctl(append([]string{"consumer", "snapshot", "restore", snap, "--to-stream", tg.stream, "--execute", "--json"}, r.to...)...)
	if code != 0 {
		r.t.Fatalf("snapshot restore --to-stream %s exited %d:\n%s\n%s", tg.stream, code, out, errs)
	}
	var doc copyDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		r.t.Fatalf("snapshot restore --json: %v\n%s", err, out)
	}
	if len(doc.Copies) != len(names) {
		r.t.Fatalf("snapshot restore copied %d consumers, want %d:\n%s", len(doc.Copies), len(names), out)
	}
	r.check(tg, doc, want)
}

// restoreLost exports a snapshot of four new origin consumers at ack
// floors below end, kills the origin's server, restores the file onto tg
// through a connection to targetURL, and checks the first message of each.
func (r *replicas) restoreLost(tg target, origin *natsproc.Server, targetURL string, end int) {
	r.t.Helper()
	want := map[string]uint64{}
	names := []string{}
	for j := 0; j < 4; j++ {
		name, from := r.originConsumer(tg.filters, end)
		want[name] = from
		names = append(names, name)
	}
	filters := map[string]string{}
	for _, n := range names {
		filters[n] = r.filterOf(n)
	}
	file := filepath.Join(r.home, "lost.json")
	if code, out, errs := r.jsctl(append([]string{"consumer", "snapshot", "save", "lost", "ORDERS", "--export", file}, names...)...); code != 0 {
		r.t.Fatalf("snapshot save exited %d:\n%s\n%s", code, out, errs)
	}
	origin.Kill()
	code, out, errs := r.jsctl("--timeout", "1s", "consumer", "snapshot", "restore", "lost", "--from-file", file, "--to-stream", tg.stream, "--to-server", targetURL, "--execute", "--json")
	if code != 0 || !strings.Contains(errs, "translating from the replica's records alone") {
		r.t.Fatalf("snapshot restore from a file with the origin lost exited %d:\n%s\n%s", code, out, errs)
	}
	var doc copyDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		r.t.Fatalf("snapshot restore --json: %v\n%s", err, out)
	}
	r.filters = filters
	r.check(tg, doc, want)
}
