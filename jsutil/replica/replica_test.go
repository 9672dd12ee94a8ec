package replica

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// TestTranslateOneServer: one nats-server process with an origin, a mirror,
// a stream sourcing the origin and a second origin (interleaved), a
// filtered source, a source with a subject transform, a source of a source
// (no record of the origin: by time) and a source that stopped copying
// (discard new at 40 messages: refused as behind).
func TestTranslateOneServer(t *testing.T) {
	s := natsproc.Start(t, natsproc.Options{})
	js := connectJS(t, s.URL(), "")
	mustStream(t, js, jetstream.StreamConfig{Name: "ORIGIN", Subjects: []string{"orders.>"}})
	mustStream(t, js, jetstream.StreamConfig{Name: "ORIGIN2", Subjects: []string{"other.>"}})
	// Deleted before the replicas copy them: the mirror skips them, sources
	// never see them.
	publish(t, js, "ORIGIN", 60, "orders.eu.a", "orders.us.a", "orders.us.b")
	deleteSeqs(t, js, "ORIGIN", 7, 14, 21, 22, 23, 59)

	mustStream(t, js, jetstream.StreamConfig{Name: "MIRROR", Mirror: &jetstream.StreamSource{Name: "ORIGIN"}})
	mustStream(t, js, jetstream.StreamConfig{Name: "AGG", Sources: []*jetstream.StreamSource{{Name: "ORIGIN"}, {Name: "ORIGIN2"}}})
	mustStream(t, js, jetstream.StreamConfig{Name: "FILT", Sources: []*jetstream.StreamSource{{Name: "ORIGIN", FilterSubject: "orders.eu.>"}}})
	mustStream(t, js, jetstream.StreamConfig{Name: "XFORM", Sources: []*jetstream.StreamSource{{Name: "ORIGIN",
		SubjectTransforms: []jetstream.SubjectTransformConfig{{Source: "orders.*.>", Destination: "dr.{{wildcard(1)}}.>"}}}}})
	// Both origins' copies on ORIGIN's subjects: the headers tell them apart.
	mustStream(t, js, jetstream.StreamConfig{Name: "SHARED", AllowDirect: true, Sources: []*jetstream.StreamSource{{Name: "ORIGIN"}, {Name: "ORIGIN2",
		SubjectTransforms: []jetstream.SubjectTransformConfig{{Source: "other.>", Destination: "orders.other.>"}}}}})
	mustStream(t, js, jetstream.StreamConfig{Name: "CHAIN", Sources: []*jetstream.StreamSource{{Name: "AGG"}}})
	mustStream(t, js, jetstream.StreamConfig{Name: "STUCK", MaxMsgs: 40, Discard: jetstream.DiscardNew,
		Sources: []*jetstream.StreamSource{{Name: "ORIGIN"}}})

	// Interleaved: AGG's sequences differ from both origins'.
	for i := 0; i < 20; i++ {
		publish(t, js, "ORIGIN", 10, "orders.eu.a", "orders.us.a", "orders.eu.b")
		publish(t, js, "ORIGIN2", 7, "other.x")
	}
	o, o2 := state(t, js, "ORIGIN"), state(t, js, "ORIGIN2")
	waitMsgs(t, js, "MIRROR", o.Msgs)
	waitMsgs(t, js, "AGG", o.Msgs+o2.Msgs)
	waitMsgs(t, js, "SHARED", o.Msgs+o2.Msgs)
	waitMsgs(t, js, "XFORM", o.Msgs)
	waitMsgs(t, js, "CHAIN", o.Msgs+o2.Msgs)
	waitMsgs(t, js, "STUCK", 40)
	eu := uint64(0)
	for _, m := range readTarget(t, js, "MIRROR", "ORIGIN") {
		if m.seq >= 1 && subjectOf(t, js, "ORIGIN", m.seq)[:10] == "orders.eu." {
			eu++
		}
	}
	waitMsgs(t, js, "FILT", eu)
	// Deleted on the origin after they were copied: still found exactly.
	deleteSeqs(t, js, "ORIGIN", 100, 101, 150)

	truth := map[string][]copied{}
	for _, name := range []string{"MIRROR", "AGG", "SHARED", "FILT", "XFORM", "STUCK"} {
		of := ""
		if name == "MIRROR" {
			of = "ORIGIN"
		}
		truth[name] = readTarget(t, js, name, of)
	}
	// CHAIN's header names AGG; where AGG's message came from is the truth.
	fromAGG := map[uint64]copied{}
	for _, m := range truth["AGG"] {
		fromAGG[m.seq] = m
	}
	for _, m := range readTarget(t, js, "CHAIN", "") {
		a := fromAGG[m.from]
		truth["CHAIN"] = append(truth["CHAIN"], copied{seq: m.seq, origin: a.origin, from: a.from, data: m.data})
	}
	if truth["AGG"][0].seq == truth["AGG"][0].from && truth["AGG"][len(truth["AGG"])-1].from == o.LastSeq {
		t.Logf("AGG's sequences happen to match ORIGIN's at both ends")
	}

	rng := rand.New(rand.NewPCG(21, 1))
	origin := Side{JS: js, Stream: "ORIGIN"}
	want := map[string]Method{"MIRROR": Mirror, "AGG": Source, "SHARED": Source, "FILT": Source, "XFORM": Source, "CHAIN": ByTime}
	for _, name := range []string{"MIRROR", "AGG", "SHARED", "FILT", "XFORM", "CHAIN"} {
		c := checkRandom(t, rng, origin, Side{JS: js, Stream: name}, truth[name], 100)
		t.Logf("ORIGIN → %-6s %s", name, c)
		if name == "CHAIN" {
			if c.byTime != c.tried {
				t.Errorf("CHAIN: %d of %d translated by time, want all", c.byTime, c.tried)
			}
		} else if c.exact != c.tried {
			t.Errorf("%s: %d of %d exact, want all", name, c.exact, c.tried)
		}
		// SHARED steps over ORIGIN2's copies in batches (one message get
		// each, up to ~150 requests, without them).
		if name == "SHARED" && c.maxRequests > 60 {
			t.Errorf("SHARED: at most %d requests, want ≤ 60 (batched stepping)", c.maxRequests)
		}
		res, err := Translate(testCtx(t), origin, 5, Side{JS: js, Stream: name})
		if err != nil || res.Method != want[name] {
			t.Errorf("%s: method %v (%v), want %s", name, res, err, want[name])
		}
	}
	// The second origin, from the same aggregates.
	for _, name := range []string{"AGG", "SHARED"} {
		c := checkRandom(t, rng, Side{JS: js, Stream: "ORIGIN2"}, Side{JS: js, Stream: name}, truth[name], 100)
		t.Logf("ORIGIN2 → %-6s %s", name, c)
		if c.exact != c.tried {
			t.Errorf("ORIGIN2 → %s: %d of %d exact, want all", name, c.exact, c.tried)
		}
	}

	checkStuck(t, origin, Side{JS: js, Stream: "STUCK"}, truth["STUCK"], o.LastSeq)
	// A consumer that has finished everything: the next message stored.
	for _, name := range []string{"MIRROR", "AGG", "SHARED", "XFORM"} {
		res, err := Translate(testCtx(t), origin, o.LastSeq+1, Side{JS: js, Stream: name})
		next := state(t, js, name).LastSeq + 1
		if name == "MIRROR" {
			next = o.LastSeq + 1
		}
		if err != nil || res.TargetSeq != 0 || res.StartSeq != next {
			t.Errorf("%s: translate the origin's last+1 (%d): %+v, %v; want start %d", name, o.LastSeq+1, res, err, next)
		}
	}
	if _, err := Translate(testCtx(t), origin, o.LastSeq+1, Side{JS: js, Stream: "STUCK"}); !errors.Is(err, jsutil.ErrConflict) {
		t.Errorf("STUCK: translate the origin's last+1: %v, want refused", err)
	}
	if _, err := Translate(testCtx(t), origin, o.LastSeq+2, Side{JS: js, Stream: "MIRROR"}); !errors.Is(err, jsutil.ErrBadInput) {
		t.Errorf("MIRROR: translate the origin's last+2: %v, want bad input", err)
	}
	for _, name := range []string{"MIRROR", "AGG", "SHARED", "FILT", "XFORM"} {
		lag, err := ReplicaLag(testCtx(t), origin, Side{JS: js, Stream: name})
		if err != nil || lag.Messages != 0 || lag.Age != 0 || lag.LastOriginSeq != o.LastSeq {
			t.Errorf("%s: lag %+v (%v), want none at origin %d", name, lag, err, o.LastSeq)
		}
	}
	if _, err := ReplicaLag(testCtx(t), origin, Side{JS: js, Stream: "CHAIN"}); !errors.Is(err, jsutil.ErrBadInput) {
		t.Errorf("CHAIN: lag error %v, want bad input (it does not copy ORIGIN)", err)
	}
	checkRuns(t, js, true)
}

// checkStuck: a source that stopped at its 40th message translates what it
// holds and refuses positions after it, naming how far behind it is.
func checkStuck(t *testing.T, origin, target Side, truth []copied, originLast uint64) {
	t.Helper()
	ctx := testCtx(t)
	lastCopied := truth[len(truth)-1].from
	res, err := Translate(ctx, origin, lastCopied, target)
	if err != nil || res.TargetSeq != truth[len(truth)-1].seq {
		t.Errorf("%s: translate %d (its last copy): %+v, %v", target.Stream, lastCopied, res, err)
	}
	asked := lastCopied + 30
	res, err = Translate(ctx, origin, asked, target)
	var behind *BehindError
	if !errors.Is(err, jsutil.ErrConflict) || !errors.As(err, &behind) || res == nil ||
		res.Behind != 30 || res.TargetSeq != 0 || behind.CopiedSeq != lastCopied || behind.Behind != 30 {
		t.Fatalf("%s: translate %d: %+v, %v; want refused 30 behind (copied up to %d)", target.Stream, asked, res, err, lastCopied)
	}
	t.Logf("refused: %v", err)
	lag, err := ReplicaLag(ctx, origin, target)
	// The first message not copied is the one after the last copied (no
	// deletions there in this test).
	if err != nil || lag.LastCopiedSeq != lastCopied || lag.Messages != originLast-lastCopied || lag.Age <= 0 {
		t.Errorf("%s: lag %+v (%v), want %d messages after %d", target.Stream, lag, err, originLast-lastCopied, lastCopied)
	}
}

func subjectOf(t testing.TB, js jetstream.JetStream, stream string, seq uint64) string {
	t.Helper()
	s, err := js.Stream(testCtx(t), stream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetMsg(testCtx(t), seq)
	if err != nil {
		return "          "
	}
	return m.Subject
}
