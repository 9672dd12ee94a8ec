package seek

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// fakeStream answers message gets from a list, the way the server's
// $JS.API.STREAM.MSG.GET handler does (start_time → the first sequence
// with time ≥ start_time; seq alone → exactly that sequence; next_by_subj →
// the first matching message at or after the sequence). It lets the tests
// use timestamps a real server rarely produces: runs of equal times.
type fakeStream struct {
	msgs        []Message // in sequence order, deleted ones left out
	first, last uint64
}

func (f *fakeStream) stream() string { return "FAKE" }

func (f *fakeStream) info(context.Context) (streamState, error) {
	st := streamState{Msgs: uint64(len(f.msgs)), FirstSeq: f.first, LastSeq: f.last,
		NumDeleted: int(f.last-f.first+1) - len(f.msgs)}
	if len(f.msgs) > 0 {
		st.FirstTime, st.LastTime = f.msgs[0].Time, f.msgs[len(f.msgs)-1].Time
	}
	return st, nil
}

func (f *fakeStream) get(_ context.Context, req getRequest) (*Message, error) {
	seq := req.Seq
	if req.StartTime != nil {
		seq = f.seqFromTime(*req.StartTime)
	}
	for i := range f.msgs {
		m := f.msgs[i]
		if req.NextFor == "" {
			if m.Sequence == seq {
				return &m, nil
			}
			continue
		}
		if m.Sequence >= seq && subjectMatches(req.NextFor, m.Subject) {
			return &m, nil
		}
	}
	return nil, nil
}

// seqFromTime is the store's time index: the first sequence with time ≥ t.
func (f *fakeStream) seqFromTime(t time.Time) uint64 {
	for _, m := range f.msgs {
		if !m.Time.Before(t) {
			return m.Sequence
		}
	}
	return f.last + 1
}

// memStoreStream answers start_time as nats-server's memory store does
// (memStore.GetSeqFromTime): a time equal to the last message's time gets
// that last message, not the first of the messages sharing its time.
type memStoreStream struct{ *fakeStream }

func (f memStoreStream) get(ctx context.Context, req getRequest) (*Message, error) {
	if req.StartTime != nil && len(f.msgs) > 0 {
		if last := f.msgs[len(f.msgs)-1]; last.Time.Equal(*req.StartTime) {
			req = getRequest{Seq: last.Sequence, NextFor: req.NextFor}
		}
	}
	return f.fakeStream.get(ctx, req)
}

// TestTiesAtLastTime checks a target equal to the time of the stream's
// last messages, several stored in one nanosecond (an atomic batch in a
// cluster), against the memory store's answer to start_time (the last of
// them): every mode and filter still finds the first of the tie.
func TestTiesAtLastTime(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Microsecond)
	f := &fakeStream{first: 1, last: 6, msgs: []Message{
		{Sequence: 1, Time: t0, Subject: "t.a"},
		{Sequence: 2, Time: t1, Subject: "t.b"}, // the batch: 2 to 6
		{Sequence: 3, Time: t1, Subject: "t.a"},
		{Sequence: 4, Time: t1, Subject: "t.c"},
		{Sequence: 6, Time: t1, Subject: "t.c"}, // 5 deleted
	}}
	for _, target := range []time.Time{t1, t1.Add(-time.Nanosecond)} {
		for _, mode := range []Mode{After, Before, Nearest} {
			for _, filter := range []string{"", "t.a", "t.b", "t.c", "t.*", "t.none"} {
				want, wantSeq := expect(f.msgs, f.first, f.last, target, mode, filter)
				res, err := seekWith(context.Background(), memStoreStream{f}, target, Options{Mode: mode, Subject: filter, Strategy: Server})
				if err != nil {
					t.Fatal(err)
				}
				if msgString(res.Message) != msgString(want) || res.Sequence != wantSeq {
					t.Errorf("%s %q at %s: got %s seq %d, want %s seq %d", mode, filter, target.Format(time.RFC3339Nano),
						msgString(res.Message), res.Sequence, msgString(want), wantSeq)
				}
			}
		}
	}
}

// TestRandomizedEqualTimes checks every mode × filter × strategy against
// the answer found by looking at every message, on streams where many
// messages share a timestamp and sequences are missing.
func TestRandomizedEqualTimes(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -seek.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	subjects := []string{"r.a", "r.b", "r.c.x", "r.c.y"}
	filters := []string{"", "r.a", "r.c.>", "r.*", "none.x"}
	rounds := 12
	if raceEnabled {
		rounds = 5 // several times slower; a new seed each run covers others
	}
	for round := 0; round < rounds; round++ {
		f := &fakeStream{first: 1 + uint64(rng.IntN(50))}
		now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
		n := rng.IntN(120)
		for i := 0; i < n; i++ {
			seq := f.first + uint64(i)
			f.last = seq
			if rng.IntN(3) == 0 {
				now = now.Add(time.Duration(rng.IntN(3)) * time.Microsecond)
			}
			if rng.IntN(5) == 0 || (i > 30 && i < 50 && round%2 == 0) {
				continue // deleted (single, or a long run)
			}
			f.msgs = append(f.msgs, Message{Sequence: seq, Time: now, Subject: subjects[rng.IntN(len(subjects))], Data: []byte(fmt.Sprint(i))})
		}
		if f.last == 0 {
			f.last = f.first - 1 // empty or purged
		}
		var targets []time.Time
		for _, m := range f.msgs {
			targets = append(targets, m.Time, m.Time.Add(-time.Nanosecond), m.Time.Add(time.Nanosecond), m.Time.Add(time.Microsecond/2))
		}
		targets = append(targets, now.Add(-time.Hour), now.Add(time.Hour))
		getters := []struct {
			name     string
			g        getter
			strategy Strategy
		}{
			{"server", f, Server},
			{"server-memstore", memStoreStream{f}, Server},
			{"bisect", f, Bisect},
			{"auto-old", oldServer{getter: f}, Auto},
		}
		for _, g := range getters {
			for _, mode := range []Mode{After, Before, Nearest} {
				for _, filter := range filters {
					for _, target := range targets {
						want, wantSeq := expect(f.msgs, f.first, f.last, target, mode, filter)
						res, err := seekWith(context.Background(), g.g, target, Options{Mode: mode, Subject: filter, Strategy: g.strategy, Around: 2})
						if err != nil {
							t.Fatal(err)
						}
						if msgString(res.Message) != msgString(want) || res.Sequence != wantSeq {
							t.Fatalf("round %d %s %s %q %s: got %s seq %d, want %s seq %d", round, g.name, mode, filter,
								target.Format(time.RFC3339Nano), msgString(res.Message), res.Sequence, msgString(want), wantSeq)
						}
						checkNeighbours(t, f.msgs, res, filter, 2)
						if !res.Exact() {
							t.Fatalf("round %d %s: equal timestamps reported as stepping back: %+v", round, g.name, res.SteppedBack)
						}
					}
				}
			}
		}
	}
}

// checkNeighbours checks res.Neighbours against the messages around
// res.Sequence.
func checkNeighbours(t *testing.T, msgs []Message, res *Result, filter string, around int) {
	t.Helper()
	var before, after []Message
	for _, m := range msgs {
		if !subjectMatches(filter, m.Subject) {
			continue
		}
		if m.Sequence < res.Sequence {
			before = append(before, m)
		} else if len(after) < around+1 {
			after = append(after, m)
		}
	}
	if len(before) > around {
		before = before[len(before)-around:]
	}
	if res.Message == nil && len(after) > around {
		after = after[:around]
	}
	want := append(before, after...)
	if len(want) != len(res.Neighbours) {
		t.Fatalf("%s %q at %d: %d neighbours, want %d", res.Mode, filter, res.Sequence, len(res.Neighbours), len(want))
	}
	for i := range want {
		if want[i].Sequence != res.Neighbours[i].Sequence {
			t.Fatalf("%s %q at %d: neighbour %d is #%d, want #%d", res.Mode, filter, res.Sequence, i, res.Neighbours[i].Sequence, want[i].Sequence)
		}
	}
}
