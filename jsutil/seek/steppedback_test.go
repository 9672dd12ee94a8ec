package seek

import (
	"context"
	"sort"
	"testing"
	"time"
)

// indexStream answers start_time as a store's time index does: a binary
// search over its timestamps, which assumes they never go backwards (as
// nats-server's GetSeqFromTime does). On a stream whose timestamps step
// back (nats-server#8368: a leader with another clock) it answers a
// sequence that may not be the first at or after the time.
type indexStream struct{ *fakeStream }

func (f indexStream) get(ctx context.Context, req getRequest) (*Message, error) {
	if req.StartTime != nil {
		i := sort.Search(len(f.msgs), func(i int) bool { return !f.msgs[i].Time.Before(*req.StartTime) })
		seq := f.last + 1
		if i < len(f.msgs) {
			seq = f.msgs[i].Sequence
		}
		req = getRequest{Seq: seq, NextFor: req.NextFor}
		if req.NextFor == "" {
			req.NextFor = ">"
		}
	}
	return f.fakeStream.get(ctx, req)
}

// steppedStream is ten messages a minute apart from 10:01 whose sequences
// from..to were stamped back minutes earlier: with to 10, a leader whose
// clock runs behind took over (nats-server#8368).
func steppedStream(from, to uint64, back int) *fakeStream {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	f := &fakeStream{first: 1, last: 10}
	for i := uint64(1); i <= 10; i++ {
		t := t0.Add(time.Duration(i) * time.Minute)
		if i >= from && i <= to {
			t = t.Add(-time.Duration(back) * time.Minute)
		}
		f.msgs = append(f.msgs, Message{Sequence: i, Time: t, Subject: "s.x"})
	}
	return f
}

// TestSeekReportsSteppedBack (issue 27, finding 6): on a stream whose
// timestamps go backwards, every strategy and mode that reads a stepped
// back timestamp on its way (its probes, the stream's first and last
// message as its state reports them, the neighbours it fetches) reports
// it, with the sequences seen, instead of answering as if the answer were
// exact.
func TestSeekReportsSteppedBack(t *testing.T) {
	behind := steppedStream(6, 10, 10) // 10:01 ... 10:05, then 09:56 ... 10:00
	middle := steppedStream(6, 6, 3)   // 10:05, then 10:03, then 10:07
	at := func(h, m, s int) time.Time { return time.Date(2026, 11, 29, h, m, s, 0, time.UTC) }
	for _, c := range []struct {
		name     string
		g        getter
		f        *fakeStream
		strategy Strategy
		mode     Mode
		target   time.Time
		around   int
		from, to uint64 // the stepped back sequences
	}{
		// The client's binary search probes sequence 6 (09:56) first.
		{"bisect after", behind, behind, Bisect, After, at(10, 3, 0), 0, 6, 10},
		{"bisect before", behind, behind, Bisect, Before, at(10, 3, 0), 0, 6, 10},
		{"bisect nearest", behind, behind, Bisect, Nearest, at(9, 57, 30), 0, 6, 10},
		// The server's index answers "none at or after 10:03" (it binary
		// searches too); the stream's last message is older than its first.
		{"server after", indexStream{behind}, behind, Server, After, at(10, 3, 0), 0, 6, 10},
		{"server nearest", indexStream{behind}, behind, Server, Nearest, at(9, 57, 30), 0, 6, 10},
		{"auto before", indexStream{behind}, behind, Auto, Before, at(10, 3, 0), 0, 6, 10},
		// A step in the middle is seen only by reading across it: here by
		// the neighbours of the answer (sequence 7).
		{"server after, neighbours", indexStream{middle}, middle, Server, After, at(10, 6, 0), 2, 6, 6},
	} {
		res, err := seekWith(context.Background(), c.g, c.target, Options{Mode: c.mode, Strategy: c.strategy, Around: c.around})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if res.Exact() {
			t.Errorf("%s: answered sequence %d as exact; read %v", c.name, res.Sequence, res.Seen)
			continue
		}
		for _, sb := range res.SteppedBack {
			if !(sb.Earlier.Sequence < sb.Later.Sequence && sb.Later.Time.Before(sb.Earlier.Time)) {
				t.Errorf("%s: %+v is not a step back", c.name, sb)
			}
			if sb.Later.Sequence < c.from || sb.Later.Sequence > c.to {
				t.Errorf("%s: %+v: only sequences %d to %d step back", c.name, sb, c.from, c.to)
			}
		}
		for i, st := range res.Seen {
			if i > 0 && res.Seen[i-1].Sequence >= st.Sequence {
				t.Errorf("%s: seen not in sequence order: %v", c.name, res.Seen)
			}
			if m := c.f.msgs[st.Sequence-1]; !m.Time.Equal(st.Time) {
				t.Errorf("%s: seen %+v, but message %d is stamped %s", c.name, st, st.Sequence, m.Time)
			}
		}
	}
	// Reading only messages in order (the middle step, with no neighbour
	// across it) sees nothing wrong: the answer is exact there.
	res, err := seekWith(context.Background(), indexStream{middle}, at(10, 8, 0), Options{Strategy: Server})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Exact() || res.Sequence != 8 {
		t.Errorf("a seek that reads no step: sequence %d, stepped back %+v", res.Sequence, res.SteppedBack)
	}
}

// TestStepsBack checks the comparison itself: equal times are not a step
// back, and each stamp is compared with the highest time before it.
func TestStepsBack(t *testing.T) {
	at := func(seq uint64, sec int) Stamp { return Stamp{Sequence: seq, Time: time.Unix(int64(sec), 0)} }
	got := stepsBack([]Stamp{at(1, 10), at(2, 10), at(3, 20), at(4, 15), at(5, 19), at(6, 21), at(7, 21)})
	want := []StepBack{{at(3, 20), at(4, 15)}, {at(3, 20), at(5, 19)}}
	if len(got) != len(want) {
		t.Fatalf("stepsBack = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("stepsBack[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	if sb := stepsBack(nil); sb != nil {
		t.Errorf("no stamps: %+v", sb)
	}
}
