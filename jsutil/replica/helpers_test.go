package replica

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func testCtx(t testing.TB) context.Context { return testserver.Context(t, 3*time.Minute) }

// connectJS connects to url and returns a JetStream handle (of domain when
// not empty).
func connectJS(t testing.TB, url, domain string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	var js jetstream.JetStream
	if domain != "" {
		js, err = jetstream.NewWithDomain(nc, domain)
	} else {
		js, err = jetstream.New(nc)
	}
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func mustStream(t testing.TB, js jetstream.JetStream, cfg jetstream.StreamConfig) {
	t.Helper()
	if _, err := testserver.CreateStream(testCtx(t), js, cfg); err != nil {
		t.Fatalf("create stream %s: %v", cfg.Name, err)
	}
}

// publish publishes n messages to subjects in turn, each with a payload
// naming its stream and sequence, and returns the last sequence.
func publish(t testing.TB, js jetstream.JetStream, stream string, n int, subjects ...string) {
	t.Helper()
	ctx := testCtx(t)
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	next := s.CachedInfo().State.LastSeq + 1
	for i := 0; i < n; i++ {
		subj := subjects[i%len(subjects)]
		ack, err := testserver.Publish(ctx, js, &nats.Msg{Subject: subj, Data: fmt.Appendf(nil, "%s-%d", stream, next)})
		if err != nil {
			t.Fatalf("publish %s: %v", subj, err)
		}
		if ack.Stream != stream || ack.Sequence != next {
			t.Fatalf("publish %s: stored in %s at %d, want %s at %d", subj, ack.Stream, ack.Sequence, stream, next)
		}
		next++
	}
}

// publishLocal publishes n messages to a stream that also sources others
// (its sequences are not known in advance).
func publishLocal(t testing.TB, js jetstream.JetStream, stream string, n int, subject string) {
	t.Helper()
	for i := 0; i < n; i++ {
		ack, err := testserver.Publish(testCtx(t), js, &nats.Msg{Subject: subject, Data: []byte(stream)})
		if err != nil || ack.Stream != stream {
			t.Fatalf("publish %s: %v %v", subject, ack, err)
		}
	}
}

func deleteSeqs(t testing.TB, js jetstream.JetStream, stream string, seqs ...uint64) {
	t.Helper()
	ctx := testCtx(t)
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range seqs {
		if err := s.DeleteMsg(ctx, seq); err != nil {
			t.Fatalf("delete %s %d: %v", stream, seq, err)
		}
	}
}

func state(t testing.TB, js jetstream.JetStream, stream string) jetstream.StreamState {
	t.Helper()
	s, err := js.Stream(testCtx(t), stream)
	if err != nil {
		t.Fatal(err)
	}
	return s.CachedInfo().State
}

// waitMsgs waits until stream holds n messages.
func waitMsgs(t testing.TB, js jetstream.JetStream, stream string, n uint64) {
	t.Helper()
	testserver.WaitFor(t, 2*time.Minute, fmt.Sprintf("%s to hold %d messages", stream, n), func() bool {
		return state(t, js, stream).Msgs == n
	})
}

// copied is one target message and where it came from, read without this
// package: the mirror's own sequence, or the header's second field.
type copied struct {
	seq    uint64
	origin string // the origin stream named by the header (the stream itself for a mirror)
	from   uint64
	data   string
}

// readTarget reads every message of a target, one exact get per sequence.
func readTarget(t testing.TB, js jetstream.JetStream, stream, mirrorOf string) []copied {
	t.Helper()
	ctx := testCtx(t)
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	st := s.CachedInfo().State
	var out []copied
	for seq := max(st.FirstSeq, 1); seq <= st.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			t.Fatalf("get %s %d: %v", stream, seq, err)
		}
		c := copied{seq: seq, data: string(m.Data)}
		if mirrorOf != "" {
			c.origin, c.from = mirrorOf, seq
		} else if h := m.Header.Get("Nats-Stream-Source"); h != "" {
			f := strings.Fields(h)
			c.origin, _, _ = strings.Cut(f[0], ":")
			c.from, _ = strconv.ParseUint(f[1], 10, 64)
		}
		out = append(out, c)
	}
	return out
}

// tally counts the outcomes of translations.
type tally struct {
	tried, exact, after, byTime, refused, maxRequests int
}

func (c tally) String() string {
	return fmt.Sprintf("tried %d: exact %d (of which first-after %d), by-time %d, refused %d; at most %d requests",
		c.tried+0, c.exact, c.after, c.byTime, c.refused, c.maxRequests)
}

// checkRandom translates n random origin positions and checks each against
// the target's content (truth: the first message from origin with origin
// sequence ≥ the position; its payload is the origin message's).
func checkRandom(t *testing.T, rng *rand.Rand, origin, target Side, truth []copied, n int) tally {
	t.Helper()
	ctx := testCtx(t)
	last := state(t, origin.JS, origin.Stream).LastSeq
	var c tally
	for i := 0; i < n; i++ {
		seq := 1 + rng.Uint64N(last)
		res, err := Translate(ctx, origin, seq, target)
		c.tried++
		if err != nil {
			if errors.Is(err, jsutil.ErrConflict) {
				c.refused++
				continue
			}
			t.Fatalf("translate %s %d → %s: %v", origin.Stream, seq, target.Stream, err)
		}
		c.maxRequests = max(c.maxRequests, res.Requests)
		want := copied{}
		for _, m := range truth {
			if m.origin == origin.Stream && m.from >= seq {
				want = m
				break
			}
		}
		if res.Method == ByTime {
			c.byTime++
			// By time errs towards repeating: never past the true message.
			if want.seq != 0 && (res.StartSeq == 0 || res.StartSeq > want.seq) {
				t.Errorf("%s %d → %s by time: start %d is past the message from it (%d)", origin.Stream, seq, target.Stream, res.StartSeq, want.seq)
			}
			continue
		}
		if res.TargetSeq != want.seq || res.FromSeq != want.from || (want.seq != 0 && res.StartSeq != want.seq) {
			t.Errorf("%s %d → %s: got target %d from %d (start %d), want %d from %d", origin.Stream, seq, target.Stream, res.TargetSeq, res.FromSeq, res.StartSeq, want.seq, want.from)
			continue
		}
		if want.seq != 0 && want.data != fmt.Sprintf("%s-%d", origin.Stream, want.from) {
			t.Errorf("%s %d → %s: target %d holds %q, not origin %d's payload", origin.Stream, seq, target.Stream, want.seq, want.data, want.from)
		}
		c.exact++
		if res.FromSeq != seq {
			c.after++
		}
	}
	return c
}
