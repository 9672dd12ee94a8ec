package replica

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestTranslateRecreatedOrigin: origin O (old-1..10) is mirrored to M and
// sourced to S; O is then deleted and created again with new-1..15. M
// holds old-1..10 and new-11..15 (a mirror goes on from its last
// sequence, keeping each message's origin time); S holds old-1..10 and
// then, as nats-server 2.14+ detects the new identity, new-1..15 (each
// header's last field is the identity of the O it came from).
//
// Every position of the current O is translated only into its own copies:
// on S exactly (the copies of the old O are stepped over by their
// identity); on M exactly from 11 on, and below 11, where M's copies are
// the old O's, by time and not exact, with the reason, starting at the
// first copy of the current O (never at an old one). A snapshot of the
// old O (Side.Created) is refused while O can be read, and translated into
// the old copies when it cannot.
func TestTranslateRecreatedOrigin(t *testing.T) {
	s := natsproc.Start(t, natsproc.Options{})
	js := connectJS(t, s.URL(), "")
	ctx := testCtx(t)
	mustStream(t, js, jetstream.StreamConfig{Name: "O", Subjects: []string{"o.a"}})
	mustStream(t, js, jetstream.StreamConfig{Name: "M", Mirror: &jetstream.StreamSource{Name: "O"}})
	mustStream(t, js, jetstream.StreamConfig{Name: "S", Sources: []*jetstream.StreamSource{{Name: "O"}}})
	pub := func(prefix string, n int) {
		for i := 1; i <= n; i++ {
			if _, err := testserver.Publish(ctx, js, &nats.Msg{Subject: "o.a", Data: fmt.Appendf(nil, "%s-%d", prefix, i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	pub("old", 10)
	waitMsgs(t, js, "M", 10)
	waitMsgs(t, js, "S", 10)
	o, _ := js.Stream(ctx, "O")
	oldCreated := o.CachedInfo().Created
	for _, side := range []string{"M", "S"} {
		res, err := Translate(ctx, Side{JS: js, Stream: "O"}, 5, Side{JS: js, Stream: side})
		if err != nil || !res.Exact || res.TargetSeq != 5 {
			t.Fatalf("control, %s before the recreate: %+v %v", side, res, err)
		}
	}
	if err := js.DeleteStream(ctx, "O"); err != nil {
		t.Fatal(err)
	}
	mustStream(t, js, jetstream.StreamConfig{Name: "O", Subjects: []string{"o.a"}})
	o, _ = js.Stream(ctx, "O")
	newCreated := o.CachedInfo().Created
	pub("new", 15)
	waitMsgs(t, js, "M", 15)
	waitMsgs(t, js, "S", 25)

	payload := func(stream string, seq uint64) string {
		st, _ := js.Stream(ctx, stream)
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("get %s %d: %v", stream, seq, err)
		}
		return string(m.Data)
	}
	origin := Side{JS: js, Stream: "O"}
	for seq := uint64(1); seq <= 15; seq++ {
		res, err := Translate(ctx, origin, seq, Side{JS: js, Stream: "S"})
		if err != nil || !res.Exact || res.Method != Source || res.TargetSeq != 10+seq || payload("S", res.TargetSeq) != fmt.Sprintf("new-%d", seq) {
			t.Fatalf("O %d → S: %+v (%v); want exact at %d (new-%d)", seq, res, err, 10+seq, seq)
		}
		if res.OriginCreated == nil || !res.OriginCreated.Equal(newCreated) {
			t.Fatalf("O %d → S: held against %v, want %v", seq, res.OriginCreated, newCreated)
		}
		res, err = Translate(ctx, origin, seq, Side{JS: js, Stream: "M"})
		if err != nil {
			t.Fatalf("O %d → M: %v", seq, err)
		}
		if seq >= 11 {
			if !res.Exact || res.TargetSeq != seq || payload("M", seq) != fmt.Sprintf("new-%d", seq) {
				t.Fatalf("O %d → M: %+v; want exact at %d", seq, res, seq)
			}
			continue
		}
		if res.Exact || res.Method != ByTime || !strings.Contains(res.Reason, `"M"'s copy at sequence `+fmt.Sprint(seq)+` came from an earlier stream "O"`) ||
			res.StartSeq != 11 || payload("M", res.StartSeq) != "new-11" {
			t.Fatalf("O %d → M: %+v; want by time, not exact, starting at the first copy of the new O (11)", seq, res)
		}
	}

	// A position saved on the old O: refused while O can be read...
	_, err := Translate(ctx, Side{JS: js, Stream: "O", Created: &oldCreated}, 5, Side{JS: js, Stream: "S"})
	if !errors.Is(err, jsutil.ErrRecreated) || !strings.Contains(err.Error(), `stream "O" was deleted and created again since the position was saved`) {
		t.Fatalf("a position of the old O: %v", err)
	}
	// ... and translated into the old O's copies when it cannot.
	res, err := Translate(ctx, Side{Stream: "O", Created: &oldCreated}, 5, Side{JS: js, Stream: "S"})
	if err != nil || !res.Exact || res.TargetSeq != 5 || payload("S", 5) != "old-5" {
		t.Fatalf("a position of the old O, O unreachable: %+v %v", res, err)
	}
	res, err = Translate(ctx, Side{Stream: "O", Created: &newCreated}, 5, Side{JS: js, Stream: "S"})
	if err != nil || !res.Exact || res.TargetSeq != 15 {
		t.Fatalf("a position of the new O, O unreachable: %+v %v", res, err)
	}
}

// TestTranslateStaleCopiesBefore: a stream that sources O from sequence
// 11 on holds old-11 and old-12 of an earlier O and then, once O is
// created again, new-11 on. O's sequence 5 is found at the first copy of
// the current O after it (new-11); as the stream also holds copies of an
// earlier O, that is not exact, and the reason names the stale copy.
func TestTranslateStaleCopiesBefore(t *testing.T) {
	s := natsproc.Start(t, natsproc.Options{})
	js := connectJS(t, s.URL(), "")
	ctx := testCtx(t)
	pub := func(prefix string, n int) {
		for i := 1; i <= n; i++ {
			if _, err := testserver.Publish(ctx, js, &nats.Msg{Subject: "o.a", Data: fmt.Appendf(nil, "%s-%d", prefix, i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	mustStream(t, js, jetstream.StreamConfig{Name: "O", Subjects: []string{"o.a"}})
	pub("old", 12)
	mustStream(t, js, jetstream.StreamConfig{Name: "T", Sources: []*jetstream.StreamSource{{Name: "O", OptStartSeq: 11}}})
	waitMsgs(t, js, "T", 2)
	origin, target := Side{JS: js, Stream: "O"}, Side{JS: js, Stream: "T"}
	if res, err := Translate(ctx, origin, 5, target); err != nil || !res.Exact || res.TargetSeq != 1 || res.FromSeq != 11 {
		t.Fatalf("control: %+v %v; want exact, the first copied after 5 (11 at 1)", res, err)
	}
	if err := js.DeleteStream(ctx, "O"); err != nil {
		t.Fatal(err)
	}
	mustStream(t, js, jetstream.StreamConfig{Name: "O", Subjects: []string{"o.a"}})
	pub("new", 15)
	waitMsgs(t, js, "T", 7)
	res, err := Translate(ctx, origin, 12, target)
	if err != nil || !res.Exact || res.TargetSeq != 4 || res.FromSeq != 12 {
		t.Fatalf("O 12 → T: %+v %v; want exact at 4", res, err)
	}
	res, err = Translate(ctx, origin, 5, target)
	if err != nil || res.Exact || res.TargetSeq != 3 || res.FromSeq != 11 || !strings.Contains(res.Reason, `"T"'s copy at sequence 1 came from an earlier stream "O"`) {
		t.Fatalf("O 5 → T: %+v %v; want the first current copy (11 at 3), not exact", res, err)
	}
}
