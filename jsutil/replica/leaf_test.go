package replica

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// TestTranslateHubLeaf: a hub (domain "hub") and a leaf node (domain
// "leaf"): the leaf mirrors and sources the hub's stream across domains
// (the source header names the origin with a hash of "$JS.hub.API"), a
// leaf mirror stopped at 40 messages is refused as behind, and a leaf
// stream sourcing the leaf's own stream of the same name is translated by
// time (different domain: no exact record of the hub's stream).
func TestTranslateHubLeaf(t *testing.T) {
	hub, leaf := natsproc.StartHubLeaf(t, "hub", "leaf")
	hjs := connectJS(t, hub.URL(), "")
	ljs := connectJS(t, leaf.URL(), "")
	mustStream(t, hjs, jetstream.StreamConfig{Name: "ORIGIN", Subjects: []string{"orders.>"}})
	publish(t, hjs, "ORIGIN", 50, "orders.eu.a", "orders.us.a")
	deleteSeqs(t, hjs, "ORIGIN", 3, 4, 30)

	fromHub := func() *jetstream.StreamSource { return &jetstream.StreamSource{Name: "ORIGIN", Domain: "hub"} }
	mustStream(t, ljs, jetstream.StreamConfig{Name: "DR", Mirror: fromHub()})
	mustStream(t, ljs, jetstream.StreamConfig{Name: "ORIGIN", Subjects: []string{"local.>"}})
	mustStream(t, ljs, jetstream.StreamConfig{Name: "REGION", Subjects: []string{"region.>"}, Sources: []*jetstream.StreamSource{fromHub()}})
	mustStream(t, ljs, jetstream.StreamConfig{Name: "LOCAL", Sources: []*jetstream.StreamSource{{Name: "ORIGIN"}}})
	mustStream(t, ljs, jetstream.StreamConfig{Name: "DRSTUCK", MaxMsgs: 40, Discard: jetstream.DiscardNew, Mirror: fromHub()})
	for i := 0; i < 15; i++ {
		publish(t, hjs, "ORIGIN", 10, "orders.eu.a", "orders.us.a")
		publishLocal(t, ljs, "REGION", 3, "region.x") // REGION's own messages, interleaved
		publish(t, ljs, "ORIGIN", 2, "local.x")
	}
	o := state(t, hjs, "ORIGIN")
	waitMsgs(t, ljs, "DR", o.Msgs)
	waitMsgs(t, ljs, "REGION", o.Msgs+45)
	waitMsgs(t, ljs, "LOCAL", 30)
	waitMsgs(t, ljs, "DRSTUCK", 40)

	rng := rand.New(rand.NewPCG(21, 2))
	// The origin seen from the hub, and from the leaf through the domain.
	origins := map[string]Side{"hub": {JS: hjs, Stream: "ORIGIN"}, "leaf→hub": {JS: connectJS(t, leaf.URL(), "hub"), Stream: "ORIGIN"}}
	for _, via := range []string{"hub", "leaf→hub"} {
		origin := origins[via]
		for _, name := range []string{"DR", "REGION", "LOCAL"} {
			of := ""
			if name == "DR" {
				of = "ORIGIN"
			}
			truth := readTarget(t, ljs, name, of)
			if name == "LOCAL" {
				truth = nil // a different stream named ORIGIN: nothing in it came from the hub's
			}
			c := checkRandom(t, rng, origin, Side{JS: ljs, Stream: name}, truth, 100)
			t.Logf("%s ORIGIN → leaf %-7s %s", via, name, c)
			if name == "LOCAL" {
				if c.byTime != c.tried {
					t.Errorf("LOCAL: %d of %d by time, want all (it copies the leaf's own ORIGIN)", c.byTime, c.tried)
				}
			} else if c.exact != c.tried {
				t.Errorf("%s: %d of %d exact, want all", name, c.exact, c.tried)
			}
		}
	}
	checkStuck(t, origins["hub"], Side{JS: ljs, Stream: "DRSTUCK"}, readTarget(t, ljs, "DRSTUCK", "ORIGIN"), o.LastSeq)
	checkOffline(t, hub, ljs, o.LastSeq)
}

// checkOffline: with the hub stopped, the leaf's replicas translate from
// their own records (mirror sequences, source headers), and a position
// they do not hold is refused since whether more is coming cannot be told.
func checkOffline(t *testing.T, hub *natsproc.Server, ljs jetstream.JetStream, lastSeq uint64) {
	t.Helper()
	ctx := testCtx(t)
	via, err := OriginVia(ctx, Side{JS: ljs, Stream: "DR"}, "ORIGIN")
	if err != nil {
		t.Fatal(err)
	}
	truth := map[string][]copied{"DR": readTarget(t, ljs, "DR", "ORIGIN"), "REGION": readTarget(t, ljs, "REGION", "")}
	hub.Stop()
	rng := rand.New(rand.NewPCG(21, 3))
	for _, origin := range []Side{via, {Stream: "ORIGIN"}} {
		for _, name := range []string{"DR", "REGION"} {
			target := Side{JS: ljs, Stream: name}
			for i := 0; i < 10; i++ {
				seq := 1 + rng.Uint64N(lastSeq)
				res, err := Translate(ctx, origin, seq, target)
				want := copied{}
				for _, m := range truth[name] {
					if m.origin == "ORIGIN" && m.from >= seq {
						want = m
						break
					}
				}
				if err != nil || !res.OriginUnreachable || res.TargetSeq != want.seq || res.FromSeq != want.from {
					t.Fatalf("hub stopped: %s %d → %s: %+v, %v; want %d from %d", origin.Stream, seq, name, res, err, want.seq, want.from)
				}
			}
			res, err := Translate(ctx, origin, lastSeq+5, target)
			var behind *BehindError
			if !errors.As(err, &behind) || !behind.Unknown || !errors.Is(err, jsutil.ErrConflict) || res.Behind != 5 {
				t.Errorf("hub stopped: %d → %s: %+v, %v; want refused, unknown, 5 behind", lastSeq+5, name, res, err)
			}
		}
	}
}
