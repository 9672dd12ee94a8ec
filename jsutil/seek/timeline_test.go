package seek

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestTimeline checks bucket counts against reading every message, for
// each counting method.
func TestTimeline(t *testing.T) {
	js := startJS(t)
	ctx := testCtx(t)
	build := func(name string, direct bool) jetstream.Stream {
		s := mustStream(t, js, jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"}, AllowDirect: direct})
		for i := 0; i < 60; i++ {
			if i%20 == 0 {
				time.Sleep(5 * time.Millisecond)
			}
			mustPub(t, js, name+"."+[]string{"a", "b", "c"}[i%3], "x")
		}
		return s
	}
	plain := build("PLAIN", false)
	direct := build("DIRECT", true)
	cons := build("CONS", false)
	for _, s := range []jetstream.Stream{direct, cons} {
		for _, seq := range []uint64{3, 4, 5, 30, 31, 60} {
			if err := s.DeleteMsg(ctx, seq); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := []struct {
		stream  jetstream.Stream
		subject string
		method  string
	}{
		{plain, "", CountBySequence},
		{plain, "PLAIN.a", CountByConsumer},
		{direct, "", CountByDirectGet},
		{direct, "DIRECT.b", CountByDirectGet},
		{cons, "", CountByConsumer},
		{cons, "CONS.*", CountByConsumer},
		{cons, "none", CountByConsumer},
	}
	for _, c := range cases {
		name := c.stream.CachedInfo().Config.Name
		msgs, _, _ := readAll(t, c.stream)
		for _, st := range []Strategy{Server, Bisect} {
			for _, buckets := range []int{1, 7} {
				since := msgs[0].Time.Add(-time.Millisecond)
				until := msgs[len(msgs)-1].Time // inclusive
				res, err := Timeline(ctx, js, name, TimelineOptions{Since: since, Until: until, Buckets: buckets, Subject: c.subject, Strategy: st})
				if err != nil {
					t.Fatalf("%s %q: %v", name, c.subject, err)
				}
				if c.subject == "none" {
					if len(res.Buckets) != 0 || res.Total != 0 {
						t.Fatalf("%s %q: nothing matches, yet %d buckets", name, c.subject, len(res.Buckets))
					}
					continue
				}
				if res.Method != c.method || len(res.Buckets) != buckets {
					t.Fatalf("%s %q: method %s with %d buckets, want %s and %d", name, c.subject, res.Method, len(res.Buckets), c.method, buckets)
				}
				var total uint64
				for i, b := range res.Buckets {
					var want uint64
					for _, m := range msgs {
						in := !m.Time.Before(b.Start) && (m.Time.Before(b.End) || i == buckets-1 && m.Time.Equal(b.End))
						if in && subjectMatches(c.subject, m.Subject) {
							want++
						}
					}
					if b.Count != want {
						t.Errorf("%s %q %s bucket %d/%d [%s, %s): %d, want %d", name, c.subject, st, i, buckets,
							b.Start.Format(time.RFC3339Nano), b.End.Format(time.RFC3339Nano), b.Count, want)
					}
					total += want
				}
				if res.Total != total {
					t.Errorf("%s %q: total %d, want %d", name, c.subject, res.Total, total)
				}
			}
		}
	}

	// Defaults: from the first to the last matching message, 20 buckets.
	res, err := Timeline(ctx, js, "PLAIN", TimelineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Buckets) != 20 || res.Total != 60 || !res.Since.Equal(plain.CachedInfo().State.FirstTime) ||
		!res.Until.Equal(plain.CachedInfo().State.LastTime) || res.SinceGiven || res.UntilGiven {
		t.Errorf("defaults: %d buckets, total %d, since %s, until %s", len(res.Buckets), res.Total, res.Since, res.Until)
	}
	mustStream(t, js, jetstream.StreamConfig{Name: "NONE", Subjects: []string{"none.>"}})
	res, err = Timeline(ctx, js, "NONE", TimelineOptions{})
	if err != nil || len(res.Buckets) != 0 || res.Total != 0 {
		t.Errorf("empty stream: %v, %d buckets", err, len(res.Buckets))
	}
}

// TestTimelineFilterWindow: with a filter, the default window is the first
// to the last matching message, each bucket's Sequence is what Seek with
// the same filter finds for its start, boundaries past the last matching
// message cost no request, and progress reaches its total.
func TestTimelineFilterWindow(t *testing.T) {
	js := startJS(t)
	ctx := testCtx(t)
	mustStream(t, js, jetstream.StreamConfig{Name: "F", Subjects: []string{"F.>"}})
	for i := 0; i < 40; i++ {
		if i%10 == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		subj := "F.other"
		if i >= 10 && i < 30 && i%2 == 0 {
			subj = "F.eu"
		}
		mustPub(t, js, subj, "x")
	}
	var calls, lastDone, lastTotal int
	res, err := Timeline(ctx, js, "F", TimelineOptions{Subject: "F.eu", Buckets: 5, Progress: func(done, total int) {
		calls++
		lastDone, lastTotal = done, total
	}})
	if err != nil {
		t.Fatal(err)
	}
	first, err := Seek(ctx, js, "F", time.Unix(0, 0), Options{Subject: "F.eu"})
	if err != nil {
		t.Fatal(err)
	}
	lastRes, err := Seek(ctx, js, "F", time.Unix(0, 0).Add(1<<62), Options{Subject: "F.eu", Mode: Before})
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != 10 || !res.Since.Equal(first.Message.Time) || !res.Until.Equal(lastRes.Message.Time) {
		t.Fatalf("window %s..%s with %d messages, want the first and last F.eu messages (%s, %s) and 10",
			res.Since.Format(time.RFC3339Nano), res.Until.Format(time.RFC3339Nano), res.Total, first.Message.Time, lastRes.Message.Time)
	}
	for i, b := range res.Buckets {
		sk, err := Seek(ctx, js, "F", b.Start, Options{Subject: "F.eu"})
		if err != nil {
			t.Fatal(err)
		}
		if b.Sequence != sk.Sequence {
			t.Errorf("bucket %d starting %s: SEQ %d, but seek with the filter says %d", i, b.Start.Format(time.RFC3339Nano), b.Sequence, sk.Sequence)
		}
	}
	if calls == 0 || lastDone != lastTotal {
		t.Errorf("progress: %d calls, last %d of %d", calls, lastDone, lastTotal)
	}

	// A window reaching far past the last message: its boundaries there
	// are not sought.
	far, err := Timeline(ctx, js, "F", TimelineOptions{Since: res.Since, Until: res.Until.Add(99 * res.Until.Sub(res.Since)), Buckets: 100, Subject: "F.eu"})
	if err != nil {
		t.Fatal(err)
	}
	if far.Total != 10 || far.Requests > 20 { // 100 boundaries, 98 of them past the end
		t.Errorf("far window: total %d with %d requests; boundaries past the last message must cost nothing", far.Total, far.Requests)
	}
	for _, b := range far.Buckets[2:] {
		if b.Count != 0 || b.Sequence != far.LastSeq+1 {
			t.Errorf("bucket past the last message: %+v", b)
		}
	}
}
