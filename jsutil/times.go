package jsutil

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// TimeForms names the time forms ParseTime accepts; it is quoted in errors
// and help text.
const TimeForms = `RFC 3339 ("2026-11-29T10:00:00Z", "2026-11-29T10:00:00.5+01:00"), ` +
	`"2026-11-29 10:00:05", "2026-11-29 10:00", "2026-11-29", "10:00:05" (today), ` +
	`Unix seconds, milliseconds, microseconds or nanoseconds ("1795946400"), "@1795946400", ` +
	`"now", or a time relative to now ("-90m", "2h ago", "now-1d12h", "1d")`

// zonedLayouts are read as a wall clock in the caller's zone.
var zonedLayouts = []string{
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04",
	"2006-01-02 15:04",
	"2006-01-02",
}

// ParseTime reads a point in time in any of the forms of TimeForms:
//
//   - RFC 3339, with or without a fraction; the offset is honoured (a space
//     may stand for the "T", and "t" and "z" may be lower case);
//   - a date and wall clock without an offset ("2006-01-02 15:04:05",
//     "2006-01-02 15:04", "2006-01-02", and the same with "T"), read in loc;
//   - a wall clock alone ("15:04:05", "15:04", with an optional fraction):
//     that time today in loc;
//   - Unix time as digits with an optional fraction, whose magnitude picks
//     the unit: below 1e11 seconds, below 1e14 milliseconds, below 1e17
//     microseconds, otherwise nanoseconds; "@N" is always seconds;
//   - "now"; a duration before now ("-90m", "90m", "2h ago", "now-1d12h",
//     "1d") or after it ("+10m", "now+10m"). Durations may use days (d).
//
// A wall clock that falls twice in loc (when clocks go back) means the
// earlier instant; one that does not exist (when clocks go forward) is moved
// forward by the gap, so "02:30" on the spring-forward day in Europe/Berlin
// is 03:30 CEST. Forms without an offset are read in loc (UTC when nil).
//
// An unreadable time is an error wrapping ErrBadInput that names the
// accepted forms; so is a time outside MinTime..MaxTime.
func ParseTime(s string, now time.Time, loc *time.Location) (time.Time, error) {
	if loc == nil {
		loc = time.UTC
	}
	t, ok := parseTime(strings.TrimSpace(s), now, loc)
	if !ok {
		return time.Time{}, Errorf(ErrBadInput, "cannot read time %q: use %s", s, TimeForms)
	}
	if err := CheckTimeRange(t, fmt.Sprintf("time %q", s)); err != nil {
		return time.Time{}, err
	}
	return t, nil
}

// CheckTimeRange returns a usage error naming what when t is outside
// MinTime..MaxTime, for times computed rather than parsed (now minus a
// duration).
func CheckTimeRange(t time.Time, what string) error {
	if t.Before(MinTime) || t.After(MaxTime) {
		return Errorf(ErrBadInput, "%s is out of range: use a time from 1970-01-01T00:00:00Z to 2262-04-11T23:47:16Z (message times are nanoseconds since 1970 in 64 bits)", what)
	}
	return nil
}

// MinTime and MaxTime bound the times ParseTime accepts: the times a
// stream's messages can have (Unix nanoseconds in an int64, from 1970).
// Any two of them are less than time.Duration's range apart, so offsets,
// spans and bucket widths between them never overflow.
var (
	MinTime = time.Unix(0, 0).UTC()
	MaxTime = time.Unix(0, math.MaxInt64).UTC()
)

func parseTime(in string, now time.Time, loc *time.Location) (time.Time, bool) {
	if in == "" {
		return time.Time{}, false
	}
	lower := strings.ToLower(in)
	if lower == "now" {
		return now, true
	}
	if looksLikeDate(in) {
		// RFC 3339 allows a lower-case "t" and "z" and, in its profile of
		// ISO 8601, a space for the "T".
		up := strings.ToUpper(in)
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00"} {
			if t, err := time.Parse(layout, up); err == nil {
				return t, true
			}
		}
		for _, layout := range zonedLayouts {
			if w, err := time.Parse(layout, up); err == nil {
				return inZone(w, loc), true
			}
		}
		return time.Time{}, false
	}
	for _, layout := range []string{"15:04:05.999999999", "15:04"} {
		if c, err := time.Parse(layout, in); err == nil {
			y, m, d := now.In(loc).Date()
			return inZone(time.Date(y, m, d, c.Hour(), c.Minute(), c.Second(), c.Nanosecond(), time.UTC), loc), true
		}
	}
	if rest, ok := strings.CutPrefix(in, "@"); ok {
		return parseUnix(rest, true)
	}
	if t, ok := parseUnix(in, false); ok {
		return t, true
	}
	return parseRelative(lower, now)
}

// looksLikeDate reports whether s starts with YYYY-MM-DD.
func looksLikeDate(s string) bool {
	return len(s) >= 10 && s[4] == '-' && s[7] == '-' && allDigits(s[:4]) && allDigits(s[5:7]) && allDigits(s[8:10])
}

// inZone reads the wall clock of w (whose zone is ignored) in loc. A wall
// clock that occurs twice gives the earlier instant; one that does not occur
// (skipped by a forward jump) is read with the offset in force before the
// jump, which moves it forward by the size of the gap.
func inZone(w time.Time, loc *time.Location) time.Time {
	wall := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), time.UTC)
	_, before := wall.Add(-36 * time.Hour).In(loc).Zone()
	_, at := wall.In(loc).Zone()
	_, after := wall.Add(36 * time.Hour).In(loc).Zone()
	var best time.Time
	found := false
	for _, off := range []int{before, at, after} {
		u := wall.Add(-time.Duration(off) * time.Second)
		l := u.In(loc)
		if sameWall(l, wall) && (!found || u.Before(best)) {
			best, found = u, true
		}
	}
	if !found {
		best = wall.Add(-time.Duration(before) * time.Second)
	}
	return best.In(loc)
}

func sameWall(a, b time.Time) bool {
	ay, am, ad := a.Date()
	by, bm, bd := b.Date()
	ah, amin, as := a.Clock()
	bh, bmin, bs := b.Clock()
	return ay == by && am == bm && ad == bd && ah == bh && amin == bmin && as == bs && a.Nanosecond() == b.Nanosecond()
}

// parseUnix reads digits (with an optional fraction) as a Unix time. With
// secondsOnly the value is seconds; otherwise the magnitude decides between
// seconds, milliseconds, microseconds and nanoseconds.
func parseUnix(s string, secondsOnly bool) (time.Time, bool) {
	intPart, frac, hasFrac := strings.Cut(s, ".")
	if intPart == "" || !allDigits(intPart) || (hasFrac && (frac == "" || !allDigits(frac))) {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(intPart, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	unit := int64(1) // nanoseconds per unit
	switch {
	case secondsOnly || n < 1e11:
		unit = 1e9
	case n < 1e14:
		unit = 1e6
	case n < 1e17:
		unit = 1e3
	}
	perSec := 1e9 / unit // units per second
	sec, rem := n/perSec, n%perSec
	ns := rem * unit
	if hasFrac {
		f, _ := strconv.ParseInt((frac + "000000000")[:9], 10, 64) // fraction in 1e-9 units
		ns += f * unit / 1e9
	}
	return time.Unix(sec, ns).UTC(), true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseRelative reads "-90m", "90m" (both in the past), "2h ago",
// "now-1d12h" and "now+10m", "+10m" (in the future).
func parseRelative(s string, now time.Time) (time.Time, bool) {
	sign := time.Duration(-1)
	switch {
	case strings.HasPrefix(s, "now"):
		rest := strings.TrimSpace(s[3:])
		switch {
		case strings.HasPrefix(rest, "-"):
			s = strings.TrimSpace(rest[1:])
		case strings.HasPrefix(rest, "+"):
			s, sign = strings.TrimSpace(rest[1:]), 1
		default:
			return time.Time{}, false
		}
	case strings.HasSuffix(s, " ago"):
		s = strings.TrimSpace(strings.TrimSuffix(s, " ago"))
	case strings.HasPrefix(s, "-"):
		s = s[1:]
	case strings.HasPrefix(s, "+"):
		s, sign = s[1:], 1
	}
	if s == "" || s[0] == '-' || s[0] == '+' {
		return time.Time{}, false
	}
	d, err := ParseDuration(s)
	if err != nil {
		return time.Time{}, false
	}
	return now.Add(sign * d), true
}

// ParseDuration reads a non-negative Go duration that may also start with
// days ("1d12h", "2d", "1.5d", "90m", "1.5h"). Errors wrap ErrBadInput.
func ParseDuration(s string) (time.Duration, error) {
	in := strings.TrimSpace(s)
	bad := Errorf(ErrBadInput, "cannot read duration %q: use a number and unit such as 90s, 15m, 2h or 1d12h", s)
	if in == "" {
		return 0, bad
	}
	if in[0] == '-' {
		return 0, Errorf(ErrBadInput, "cannot read duration %q: a negative duration is not allowed", s)
	}
	var total time.Duration
	rest := in
	if i := strings.IndexByte(in, 'd'); i >= 0 {
		days, ok := parseDays(in[:i])
		if !ok {
			return 0, bad
		}
		total, rest = days, in[i+1:]
	}
	if rest != "" {
		if rest[0] == '-' || rest[0] == '+' {
			return 0, bad
		}
		d, err := time.ParseDuration(rest)
		if err != nil {
			if strings.Contains(err.Error(), "overflow") {
				return 0, Errorf(ErrBadInput, "duration %q is too long", s)
			}
			return 0, bad
		}
		if total > math.MaxInt64-d {
			return 0, Errorf(ErrBadInput, "duration %q is too long", s)
		}
		total += d
	}
	return total, nil
}

// parseDays reads "D" or "D.F" (decimal digits only) as a number of days,
// exactly to the nanosecond for up to nine fraction digits.
func parseDays(s string) (time.Duration, bool) {
	intPart, frac, hasFrac := strings.Cut(s, ".")
	if intPart == "" && hasFrac {
		intPart = "0"
	}
	if intPart == "" || !allDigits(intPart) || (hasFrac && (frac == "" || !allDigits(frac))) {
		return 0, false
	}
	const day = 24 * time.Hour
	n, err := strconv.ParseInt(intPart, 10, 64)
	if err != nil || n > int64(math.MaxInt64/day) {
		return 0, false
	}
	d := time.Duration(n) * day
	if hasFrac {
		f, _ := strconv.ParseInt((frac + "000000000")[:9], 10, 64) // in 1e-9 days
		fd := time.Duration(f) * (day / 1e9)
		if d > math.MaxInt64-fd {
			return 0, false
		}
		d += fd
	}
	return d, true
}

// LoadLocation reads a --tz value: an IANA zone name, "UTC", or "Local" or
// "" for the local zone.
func LoadLocation(name string) (*time.Location, error) {
	switch strings.ToLower(name) {
	case "", "local":
		return time.Local, nil
	case "utc", "z":
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, Errorf(ErrBadInput, "unknown time zone %q: use an IANA name such as Europe/Berlin, UTC or Local", name)
	}
	return loc, nil
}
