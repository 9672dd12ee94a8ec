package seek

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func TestTimelineNiceWidth(t *testing.T) {
	for _, c := range []struct {
		span time.Duration
		n    int
		want time.Duration
	}{
		{2 * time.Hour, 4, 30 * time.Minute},
		{2*time.Hour + time.Nanosecond, 4, time.Hour},
		{2 * time.Hour, 20, 10 * time.Minute},
		{time.Hour, 20, 5 * time.Minute},
		{time.Hour, 24, 5 * time.Minute},
		{6 * time.Hour, 24, 15 * time.Minute},
		{90 * time.Second, 20, 5 * time.Second},
		{20 * time.Second, 20, time.Second},
		{19 * time.Second, 20, 0}, // buckets under a second: exact division
		{3 * time.Second, 20, 0},
		{999 * time.Millisecond, 1, 0}, // a window under a second: exact division
		{7 * 24 * time.Hour, 20, 12 * time.Hour},
		{30 * 24 * time.Hour, 20, 2 * day},
		{20 * day, 20, day},
		{20*day + time.Second, 20, 2 * day},
		{10 * time.Hour, 1, 12 * time.Hour},
		{13 * time.Hour, 1, day},
	} {
		if got := NiceWidth(c.span, c.n); got != c.want {
			t.Errorf("NiceWidth(%s, %d) = %s, want %s", c.span, c.n, got, c.want)
		}
	}
}

func TestTimelineRoundedBounds(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no tz database:", err)
	}
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		name         string
		since, until string
		width        time.Duration
		loc          *time.Location
		first, last  string
		buckets      int
	}{
		// The case: 2h in 4 buckets from 12:19:17.039387188.
		{"issue", "2026-11-30T12:19:17.039387188Z", "2026-11-30T14:19:17.039387188Z", 30 * time.Minute, time.UTC,
			"2026-11-30T12:00:00Z", "2026-11-30T14:30:00Z", 5},
		{"aligned", "2026-11-30T12:00:00Z", "2026-11-30T13:59:59Z", 30 * time.Minute, time.UTC,
			"2026-11-30T12:00:00Z", "2026-11-30T14:00:00Z", 4},
		{"until on a boundary is in the next bucket", "2026-11-30T12:00:00Z", "2026-11-30T14:00:00Z", 30 * time.Minute, time.UTC,
			"2026-11-30T12:00:00Z", "2026-11-30T14:30:00Z", 5},
		{"seconds", "2026-11-30T12:00:07.5Z", "2026-11-30T12:01:37.5Z", 5 * time.Second, time.UTC,
			"2026-11-30T12:00:05Z", "2026-11-30T12:01:40Z", 19},
		// Below a day, absolute time: hours of UTC, whatever the zone.
		{"hours ignore the zone", "2026-11-30T12:40:00Z", "2026-11-30T23:40:00Z", 3 * time.Hour, ny,
			"2026-11-30T12:00:00Z", "2026-12-01T00:00:00Z", 4},
		// From a day up, midnight in the zone (New York is UTC-5 in winter).
		{"days at midnight in the zone", "2026-11-30T12:00:00Z", "2026-12-03T03:00:00Z", day, ny,
			"2026-11-30T05:00:00Z", "2026-12-03T05:00:00Z", 3},
		{"days in UTC", "2026-11-30T12:00:00Z", "2026-12-03T03:00:00Z", day, time.UTC,
			"2026-11-30T00:00:00Z", "2026-12-04T00:00:00Z", 4},
		// Two-day buckets start on an even day count from 1970-01-01
		// (2026-12-01 is day 20788).
		{"two days", "2026-12-02T12:00:00Z", "2026-12-06T00:00:00Z", 2 * day, time.UTC,
			"2026-12-01T00:00:00Z", "2026-12-07T00:00:00Z", 3},
		// Calendar days across the end of daylight saving (2026-11-01 in
		// New York): the boundaries stay at local midnight.
		{"dst", "2026-10-31T12:00:00Z", "2026-11-02T12:00:00Z", day, ny,
			"2026-10-31T04:00:00Z", "2026-11-03T05:00:00Z", 3},
	} {
		b := roundedBounds(utc(c.since), utc(c.until), c.width, c.loc)
		if got := len(b) - 1; got != c.buckets || !b[0].Equal(utc(c.first)) || !b[len(b)-1].Equal(utc(c.last)) {
			t.Errorf("%s: %d buckets from %s to %s, want %d from %s to %s", c.name, got,
				b[0].UTC().Format(time.RFC3339Nano), b[len(b)-1].UTC().Format(time.RFC3339Nano), c.buckets, c.first, c.last)
		}
		if b[0].After(utc(c.since)) || !b[len(b)-1].After(utc(c.until)) || !b[len(b)-2].Before(utc(c.until)) && !b[len(b)-2].Equal(utc(c.until)) {
			t.Errorf("%s: bounds %v do not cover the window", c.name, b)
		}
	}
}

// TestTimelineRound: rounded buckets start on a multiple of the nice width,
// number N or N+1, and count only the messages inside the window (the
// first bucket starts before Since; its Sequence is Since's position).
func TestTimelineRound(t *testing.T) {
	js := startJS(t)
	ctx := testCtx(t)
	for _, direct := range []bool{false, true} {
		name := map[bool]string{false: "R", true: "RD"}[direct]
		s := mustStream(t, js, jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"}, AllowDirect: direct})
		for i := 0; i < 30; i++ {
			mustPub(t, js, name+"."+[]string{"a", "b"}[i%2], "x")
		}
		msgs, _, _ := readAll(t, s)
		since := msgs[10].Time
		until := since.Add(2 * time.Hour)
		subject := ""
		if direct {
			subject = name + ".a"
		}
		res, err := Timeline(ctx, js, name, TimelineOptions{Since: since, Until: until, Buckets: 4, Round: true, Subject: subject})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Buckets) != 5 || !res.Buckets[0].Start.Equal(since.Truncate(30*time.Minute)) ||
			!res.Buckets[4].End.Equal(since.Truncate(30*time.Minute).Add(150*time.Minute)) {
			t.Fatalf("%s: %d buckets from %s to %s, want 5 of 30m from %s", name, len(res.Buckets),
				res.Buckets[0].Start.Format(time.RFC3339Nano), res.Buckets[len(res.Buckets)-1].End.Format(time.RFC3339Nano),
				since.Truncate(30*time.Minute).Format(time.RFC3339Nano))
		}
		if res.Buckets[0].Sequence != msgs[10].Sequence {
			t.Errorf("%s: first bucket's sequence %d, want %d (the window's start)", name, res.Buckets[0].Sequence, msgs[10].Sequence)
		}
		var total uint64
		for i, b := range res.Buckets {
			if b.End.Sub(b.Start) != 30*time.Minute {
				t.Errorf("%s: bucket %d is %s wide", name, i, b.End.Sub(b.Start))
			}
			var want uint64
			for _, m := range msgs {
				if !m.Time.Before(since) && !m.Time.After(until) && !m.Time.Before(b.Start) && m.Time.Before(b.End) && subjectMatches(subject, m.Subject) {
					want++
				}
			}
			if b.Count != want {
				t.Errorf("%s: bucket %d: %d, want %d", name, i, b.Count, want)
			}
			total += want
		}
		wantTotal := uint64(20)
		if direct {
			wantTotal = 10
		}
		if total != wantTotal || res.Total != wantTotal {
			t.Errorf("%s: total %d (buckets %d), want %d: messages before Since are not counted", name, res.Total, total, wantTotal)
		}
		// Without Round the window is divided exactly.
		exact, err := Timeline(ctx, js, name, TimelineOptions{Since: since, Until: until, Buckets: 4, Subject: subject})
		if err != nil {
			t.Fatal(err)
		}
		if len(exact.Buckets) != 4 || !exact.Buckets[0].Start.Equal(since) || exact.Total != wantTotal {
			t.Errorf("%s: exact: %d buckets from %s, total %d", name, len(exact.Buckets), exact.Buckets[0].Start, exact.Total)
		}
	}
}

// TestRoundWidthBucketCount (issue 27, finding 5: --buckets 10 gave 7,
// --buckets 4 gave 3 where 30-minute buckets fit in 5) checks what
// --buckets means, as docs/seek.md and the help say it, over many N,
// window lengths and window starts: the chart has at most N+1 buckets, its
// width is the narrowest round width with which it does (the next narrower
// one needs more than N+1), and it has at least (N+1)/2.5 buckets (round
// widths grow by at most 2.5 times from one to the next).
func TestRoundWidthBucketCount(t *testing.T) {
	base := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	spans := []time.Duration{
		time.Second, 7 * time.Second, 59 * time.Second, 90 * time.Second, 65 * time.Minute, 2 * time.Hour,
		2*time.Hour + time.Nanosecond, 100 * time.Minute, 7*time.Hour + 13*time.Minute, 26 * time.Hour,
		9*day + 5*time.Hour, 61 * day, 400 * day,
	}
	offsets := []time.Duration{0, time.Nanosecond, 17*time.Minute + 300*time.Millisecond, 29*time.Minute + 59*time.Second, 13*time.Hour + 1}
	checked := 0
	for n := 1; n <= 60; n++ {
		for _, span := range spans {
			for _, off := range offsets {
				since := base.Add(off)
				until := since.Add(span)
				w := RoundWidth(since, until, n, time.UTC)
				if w == 0 {
					if span/time.Duration(n) >= time.Second {
						t.Errorf("n %d, span %s: divided exactly though span/n is %s", n, span, span/time.Duration(n))
					}
					continue
				}
				checked++
				buckets := len(roundedBounds(since, until, w, time.UTC)) - 1
				if buckets > n+1 {
					t.Errorf("n %d, span %s from %s: %d buckets of %s, more than n+1", n, span, since.Format(time.RFC3339Nano), buckets, w)
				}
				if lo := float64(n+1) / 2.5; float64(buckets) < lo {
					t.Errorf("n %d, span %s from %s: %d buckets of %s, fewer than (n+1)/2.5", n, span, since.Format(time.RFC3339Nano), buckets, w)
				}
				if narrower := prevNiceWidth(w); narrower > 0 {
					if nb := len(roundedBounds(since, until, narrower, time.UTC)) - 1; nb <= n+1 {
						t.Errorf("n %d, span %s from %s: width %s (%d buckets), but %s fits in %d", n, span, since.Format(time.RFC3339Nano), w, buckets, narrower, nb)
					}
				}
			}
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d rounded cases checked", checked)
	}
	// The cases of the issue: 4 buckets over 2h and a nanosecond are 5 of
	// 30m (not 3 of 1h); 10 over 65 minutes are 7 of 10m, since 5m would
	// take 14.
	for _, c := range []struct {
		since time.Time
		span  time.Duration
		n     int
		width time.Duration
		count int
	}{
		{base, 2*time.Hour + time.Nanosecond, 4, 30 * time.Minute, 5},
		{base, 65 * time.Minute, 10, 10 * time.Minute, 7},
	} {
		w := RoundWidth(c.since, c.since.Add(c.span), c.n, time.UTC)
		if got := len(roundedBounds(c.since, c.since.Add(c.span), w, time.UTC)) - 1; w != c.width || got != c.count {
			t.Errorf("--buckets %d over %s: %d of %s, want %d of %s", c.n, c.span, got, w, c.count, c.width)
		}
	}
}

// prevNiceWidth is the round width before w, 0 for the narrowest.
func prevNiceWidth(w time.Duration) time.Duration {
	if w > day {
		if w-day >= day {
			return w - day
		}
		return niceWidths[len(niceWidths)-1]
	}
	if w == day {
		return niceWidths[len(niceWidths)-1]
	}
	for i, nw := range niceWidths {
		if nw == w {
			if i == 0 {
				return 0
			}
			return niceWidths[i-1]
		}
	}
	return 0
}
