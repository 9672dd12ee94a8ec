package seek

import "time"

// niceWidths are the bucket widths a rounded timeline picks from, below a
// day; from a day up it uses whole days.
var niceWidths = [...]time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
}

const day = 24 * time.Hour

// NiceWidth is the smallest "nice" bucket width at least span/n: 1s, 2s,
// 5s, 10s, 15s, 30s, 1m, 2m, 5m, 10m, 15m, 30m, 1h, 2h, 3h, 6h, 12h, then
// whole days. It is 0 when span/n is under a second: such buckets are
// divided exactly (no rounding).
func NiceWidth(span time.Duration, n int) time.Duration {
	if n < 1 {
		return 0
	}
	w := span / time.Duration(n)
	if span%time.Duration(n) != 0 {
		w++
	}
	if w < time.Second {
		return 0
	}
	for _, nw := range niceWidths {
		if nw >= w {
			return nw
		}
	}
	return (w + day - 1) / day * day
}

// RoundWidth is the width of the round buckets of a timeline over [since,
// until] asked for n buckets: the narrowest of the widths NiceWidth picks
// from (1s ... 12h, then whole days) with which the window fits in at most
// n+1 buckets aligned as roundedBounds aligns them. So the chart has n+1
// buckets or fewer: n or n+1 when a round width fits so, fewer when the
// next narrower one would need more than n+1 (the widths grow by at most
// 2.5 times from one to the next, so never fewer than about (n+1)/2.5).
// It is 0 when the window divided by n is under a second: such a window is
// divided exactly into n buckets.
func RoundWidth(since, until time.Time, n int, loc *time.Location) time.Duration {
	span := until.Sub(since)
	widest := NiceWidth(span, n) // always fits: under span/n + 2 buckets
	if widest == 0 {
		return 0
	}
	// Narrower than span/(n+1), no width fits in n+1 buckets.
	for w := max(NiceWidth(span, n+1), time.Second); w < widest; w = nextNiceWidth(w) {
		if len(roundedBounds(since, until, w, loc))-1 <= n+1 {
			return w
		}
	}
	return widest
}

// nextNiceWidth is the round width after w (see NiceWidth).
func nextNiceWidth(w time.Duration) time.Duration {
	for _, nw := range niceWidths {
		if nw > w {
			return nw
		}
	}
	return (w/day + 1) * day
}

// roundedBounds are the bucket boundaries of a rounded timeline over
// [since, until]: the first is since aligned down to a multiple of width
// (in absolute time below a day; at midnight in loc, on a multiple of the
// width's days counted from 1970-01-01, from a day up), each next one
// width later (whole calendar days in loc from a day up), the last the
// first past until. With a width of at least span/n they number n+1 or
// n+2 (n or n+1 buckets).
func roundedBounds(since, until time.Time, width time.Duration, loc *time.Location) []time.Time {
	if loc == nil {
		loc = time.UTC
	}
	var at func(i int) time.Time
	if width < day {
		start := since.Truncate(width)
		at = func(i int) time.Time { return start.Add(time.Duration(i) * width) }
	} else {
		days := int(width / day)
		t := since.In(loc)
		start := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
		epoch := time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
		civil := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		k := int(civil.Sub(epoch)/day) % days
		if k < 0 {
			k += days
		}
		start = start.AddDate(0, 0, -k)
		at = func(i int) time.Time { return start.AddDate(0, 0, i*days) }
	}
	out := []time.Time{at(0)}
	for i := 1; !out[len(out)-1].After(until); i++ {
		out = append(out, at(i))
	}
	return out
}
