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

	// Defaults: since the first message, until now, 20 buckets.
	res, err := Timeline(ctx, js, "PLAIN", TimelineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Buckets) != 20 || res.Total != 60 || !res.Since.Equal(plain.CachedInfo().State.FirstTime) {
		t.Errorf("defaults: %d buckets, total %d, since %s", len(res.Buckets), res.Total, res.Since)
	}
	mustStream(t, js, jetstream.StreamConfig{Name: "NONE", Subjects: []string{"none.>"}})
	res, err = Timeline(ctx, js, "NONE", TimelineOptions{})
	if err != nil || len(res.Buckets) != 0 || res.Total != 0 {
		t.Errorf("empty stream: %v, %d buckets", err, len(res.Buckets))
	}
}
