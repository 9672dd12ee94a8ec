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
	`Unix seconds, milliseconds or nanoseconds ("1764410400"), "@1764410400", ` +
	`"now", or a time relative to now ("-90m", "2h ago", "now-1d12h", "1d")`

// zoned layouts are read in the caller's zone.
var zonedLayouts = []string{
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02 15:04",
	"2006-01-02T15:04",
	"2006-01-02",
}

// ParseTime reads a point in time in any of the forms of TimeForms.
// Forms without an offset are read in loc (UTC when nil); relative forms and
// "now" are relative to now.
func ParseTime(s string, now time.Time, loc *time.Location) (time.Time, error) {
	if loc == nil {
		loc = time.UTC
	}
	in := strings.TrimSpace(s)
	t, ok := parseTime(in, now, loc)
	if !ok {
		return time.Time{}, Errorf(ErrBadInput, "cannot read time %q: use %s", s, TimeForms)
	}
	return t, nil
}

func parseTime(in string, now time.Time, loc *time.Location) (time.Time, bool) {
	if in == "" {
		return time.Time{}, false
	}
	lower := strings.ToLower(in)
	if lower == "now" {
		return now, true
	}
	if t, err := time.Parse(time.RFC3339Nano, in); err == nil {
		return t, true
	}
	// RFC 3339 with a space instead of T and an offset.
	if t, err := time.Parse("2006-01-02 15:04:05.999999999Z07:00", in); err == nil {
		return t, true
	}
	for _, layout := range zonedLayouts {
		if t, err := time.ParseInLocation(layout, in, loc); err == nil {
			return t, true
		}
	}
	for _, layout := range []string{"15:04:05.999999999", "15:04"} {
		if c, err := time.Parse(layout, in); err == nil {
			y, m, d := now.In(loc).Date()
			return time.Date(y, m, d, c.Hour(), c.Minute(), c.Second(), c.Nanosecond(), loc), true
		}
	}
	if strings.HasPrefix(in, "@") {
		return parseUnix(in[1:], true)
	}
	if t, ok := parseUnix(in, false); ok {
		return t, true
	}
	return parseRelative(lower, now)
}

// parseUnix reads digits (with an optional fraction) as a Unix time. With
// secondsOnly the value is seconds; otherwise the magnitude decides between
// seconds, milliseconds, microseconds and nanoseconds.
func parseUnix(s string, secondsOnly bool) (time.Time, bool) {
	if s == "" || strings.HasPrefix(s, "+") || strings.HasPrefix(s, "-") {
		return time.Time{}, false
	}
	intPart, frac, hasFrac := strings.Cut(s, ".")
	if intPart == "" || !allDigits(intPart) || (hasFrac && (frac == "" || !allDigits(frac))) {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(intPart, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	scale := int64(1) // nanoseconds per unit
	switch {
	case secondsOnly || n < 1e11:
		scale = 1e9
	case n < 1e14:
		scale = 1e6
	case n < 1e17:
		scale = 1e3
	}
	if n > math.MaxInt64/scale {
		return time.Time{}, false
	}
	ns := n * scale
	if hasFrac {
		if len(frac) > 9 {
			frac = frac[:9]
		}
		f, _ := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
		ns += f * scale / 1e9
	}
	return time.Unix(0, ns).UTC(), true
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// parseRelative reads "-90m", "90m" (both in the past), "2h ago",
// "now-1d12h" and "now+10m".
func parseRelative(s string, now time.Time) (time.Time, bool) {
	sign := time.Duration(-1)
	switch {
	case strings.HasPrefix(s, "now-"):
		s = s[4:]
	case strings.HasPrefix(s, "now+"):
		s, sign = s[4:], 1
	case strings.HasSuffix(s, " ago"):
		s = strings.TrimSpace(strings.TrimSuffix(s, " ago"))
	case strings.HasPrefix(s, "-"):
		s = s[1:]
	case strings.HasPrefix(s, "+"):
		s, sign = s[1:], 1
	}
	d, err := ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, false
	}
	return now.Add(sign * d), true
}

// ParseDuration reads a Go duration that may also use days ("1d12h",
// "2d", "90m", "1.5h").
func ParseDuration(s string) (time.Duration, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return 0, Errorf(ErrBadInput, "cannot read duration %q: use a number and unit such as 90s, 15m, 2h or 1d12h", s)
	}
	var days float64
	rest := in
	if i := strings.IndexByte(in, 'd'); i >= 0 {
		v, err := strconv.ParseFloat(in[:i], 64)
		if err != nil || v < 0 || strings.ContainsAny(in[:i], "eEinfINF+-") {
			return 0, Errorf(ErrBadInput, "cannot read duration %q: use a number and unit such as 90s, 15m, 2h or 1d12h", s)
		}
		days, rest = v, in[i+1:]
	}
	var d time.Duration
	if rest != "" {
		var err error
		if d, err = time.ParseDuration(rest); err != nil || d < 0 {
			return 0, Errorf(ErrBadInput, "cannot read duration %q: use a number and unit such as 90s, 15m, 2h or 1d12h", s)
		}
	}
	total := days*float64(24*time.Hour) + float64(d)
	if total > math.MaxInt64 {
		return 0, Errorf(ErrBadInput, "duration %q is too long", s)
	}
	return time.Duration(total), nil
}

// FormatDistance renders a signed duration briefly ("+1.25s", "-3m0s").
func FormatDistance(d time.Duration) string {
	if d >= 0 {
		return fmt.Sprintf("+%s", d)
	}
	return d.String()
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
