package picker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/jsctl/jsctl/jsutil/seek"
)

var base = time.Date(2026, 12, 1, 14, 31, 38, 0, time.UTC)

// fakeSource is a stream in memory whose answers follow seek's rules by
// brute force. Its messages, from base: 0.5s eu, 1.5s us, then a burst of
// five within one second (2.1s eu, 2.3s us, 2.5s eu, 2.7s us, 2.9s eu),
// 70s eu and 2h us.
type fakeSource struct {
	mu        sync.Mutex
	msgs      []seek.Message
	consumers []ConsumerRow
	streams   []StreamRow
	seeks     int
	plans     []uint64 // the sequences planned for
	fail      error    // every request fails with it, when set
}

func newFake() *fakeSource {
	f := &fakeSource{}
	for i, d := range []struct {
		at   time.Duration
		subj string
	}{
		{500 * time.Millisecond, "orders.eu"}, {1500 * time.Millisecond, "orders.us"},
		{2100 * time.Millisecond, "orders.eu"}, {2300 * time.Millisecond, "orders.us"}, {2500 * time.Millisecond, "orders.eu"},
		{2700 * time.Millisecond, "orders.us"}, {2900 * time.Millisecond, "orders.eu"},
		{70 * time.Second, "orders.eu"}, {2 * time.Hour, "orders.us"},
	} {
		f.msgs = append(f.msgs, seek.Message{Sequence: uint64(i + 1), Time: base.Add(d.at), Subject: d.subj, Size: 7, Data: []byte(`{"n":1}`)})
	}
	at := f.msgs[1].Time
	f.consumers = []ConsumerRow{
		{Name: "audit"},
		{Name: "billing", Delivered: 2, AckFloor: 2, AckFloorTime: &at},
		{Name: "us", Filters: []string{"orders.us"}},
		{Name: "caught", Delivered: 9, AckFloor: 9},
	}
	f.streams = []StreamRow{{Name: "ORDERS", Messages: 9}, {Name: "OTHER"}, {Name: "KV_JSCTL_HISTORY"}, {Name: "OBJ_files"}}
	return f
}

func matches(subjects []string, subject string) bool {
	if len(subjects) == 0 {
		return true
	}
	for _, f := range subjects {
		if _, ok := reset.IntersectSubjects(f, subject); ok {
			return true
		}
	}
	return false
}

// bruteSeek is seek.Seek by brute force over msgs (in sequence order).
func bruteSeek(msgs []seek.Message, t time.Time, mode seek.Mode, subjects []string, around int) *seek.Result {
	r := &seek.Result{Stream: "ORDERS", Target: t, Mode: mode, FirstSeq: msgs[0].Sequence, LastSeq: msgs[len(msgs)-1].Sequence}
	var in []seek.Message
	for _, m := range msgs {
		if matches(subjects, m.Subject) {
			in = append(in, m)
		}
	}
	after, before, under := -1, -1, -1 // first ≥ t, last ≤ t, last < t
	for i, m := range in {
		if after < 0 && !m.Time.Before(t) {
			after = i
		}
		if !m.Time.After(t) {
			before = i
		}
		if m.Time.Before(t) {
			under = i
		}
	}
	pick := -1
	switch mode {
	case seek.Before:
		pick = before
	case seek.Nearest:
		switch {
		case after >= 0 && in[after].Time.Equal(t):
			pick = after
		case under < 0:
			pick = after
		case after < 0:
			pick = under
		case in[after].Time.Sub(t) <= t.Sub(in[under].Time):
			pick = after
		default:
			pick = under
		}
	default:
		pick = after
	}
	switch {
	case pick >= 0:
		m := in[pick]
		r.Message, r.Sequence = &m, m.Sequence
	case mode == seek.Before:
		r.Sequence = r.FirstSeq
	default:
		r.Sequence = r.LastSeq + 1
	}
	if around > 0 || r.Message != nil {
		r.Neighbours = bruteAround(in, r.Sequence, r.Message != nil, around)
	}
	return r
}

// bruteAt is seek.At by brute force.
func bruteAt(msgs []seek.Message, seq uint64, subjects []string, around int) *seek.Result {
	seq = max(seq, 1)
	r := &seek.Result{Stream: "ORDERS", Mode: seek.After, Sequence: seq, FirstSeq: msgs[0].Sequence, LastSeq: msgs[len(msgs)-1].Sequence}
	var in []seek.Message
	for _, m := range msgs {
		if matches(subjects, m.Subject) {
			in = append(in, m)
		}
	}
	for _, m := range in {
		if m.Sequence >= seq {
			r.Message, r.Sequence = &m, m.Sequence
			break
		}
	}
	if r.Message == nil && r.Sequence <= r.LastSeq {
		r.Sequence = r.LastSeq + 1
	}
	if around > 0 || r.Message != nil {
		r.Neighbours = bruteAround(in, r.Sequence, r.Message != nil, around)
	}
	return r
}

func bruteAround(in []seek.Message, pos uint64, chosen bool, around int) []seek.Message {
	var before, after []seek.Message
	for _, m := range in {
		if m.Sequence < pos {
			before = append(before, m)
		} else {
			after = append(after, m)
		}
	}
	if len(before) > around {
		before = before[len(before)-around:]
	}
	keep := around
	if chosen {
		keep++
	}
	if len(after) > keep {
		after = after[:keep]
	}
	return append(before, after...)
}

func (f *fakeSource) failure() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fail
}

func (f *fakeSource) Streams(context.Context) ([]StreamRow, error) {
	return f.streams, f.failure()
}

func (f *fakeSource) Consumers(context.Context, string) ([]ConsumerRow, error) {
	return f.consumers, f.failure()
}

func (f *fakeSource) Seek(_ context.Context, _ string, t time.Time, mode seek.Mode, subjects []string, around int) (*seek.Result, error) {
	if err := f.failure(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.seeks++
	f.mu.Unlock()
	return bruteSeek(f.msgs, t, mode, subjects, around), nil
}

func (f *fakeSource) At(_ context.Context, _ string, seq uint64, subjects []string, around int) (*seek.Result, error) {
	if err := f.failure(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.seeks++
	f.mu.Unlock()
	return bruteAt(f.msgs, seq, subjects, around), nil
}

func (f *fakeSource) Timeline(_ context.Context, _ string, subjects []string, _ int) (*seek.TimelineResult, error) {
	if err := f.failure(); err != nil {
		return nil, err
	}
	res := &seek.TimelineResult{Since: base, Until: base.Add(2 * time.Hour), Buckets: []seek.Bucket{
		{Start: base, End: base.Add(time.Hour)}, {Start: base.Add(time.Hour), End: base.Add(2 * time.Hour)},
	}}
	for _, m := range f.msgs {
		if matches(subjects, m.Subject) {
			i := min(int(m.Time.Sub(base)/time.Hour), 1)
			res.Buckets[i].Count++
			res.Total++
		}
	}
	return res, nil
}

func (f *fakeSource) Plan(_ context.Context, stream, consumer string, seq uint64, show int) (*reset.Plan, error) {
	if err := f.failure(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.plans = append(f.plans, seq)
	f.mu.Unlock()
	return &reset.Plan{Stream: stream, Target: reset.Target{Kind: reset.ToSeq, Seq: seq}, Changes: []*reset.Change{{Consumer: consumer, Method: reset.Reset, To: reset.To{Sequence: seq}, Redeliver: ptrU64(3), Skip: ptrU64(0)}}}, nil
}

func (f *fakeSource) ParseTime(s string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02 15:04:05.999999999", time.RFC3339Nano} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("bad time")
}

func (f *fakeSource) seekCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seeks
}

// bruteOne answers for one subject by brute force (for seekAny, atAny).
type bruteOne struct{ msgs []seek.Message }

func subjectsOf(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

func (o bruteOne) seek(_ context.Context, t time.Time, mode seek.Mode, subject string, around int) (*seek.Result, error) {
	return bruteSeek(o.msgs, t, mode, subjectsOf(subject), around), nil
}

func (o bruteOne) at(_ context.Context, seq uint64, subject string, around int) (*seek.Result, error) {
	return bruteAt(o.msgs, seq, subjectsOf(subject), around), nil
}

func ptrU64(n uint64) *uint64 { return &n }
