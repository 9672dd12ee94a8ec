package jsutil

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("load zone %s: %v", name, err)
	}
	return loc
}

func TestParseTime(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	newYork := mustZone(t, "America/New_York")
	tokyo := mustZone(t, "Asia/Tokyo")
	kiritimati := mustZone(t, "Pacific/Kiritimati") // UTC+14
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatalf("bad want %q: %v", s, err)
		}
		return v
	}
	tests := []struct {
		in   string
		loc  *time.Location
		want time.Time
	}{
		// RFC 3339, the offset wins over loc.
		{"2026-11-29T10:00:00Z", berlin, utc("2026-11-29T10:00:00Z")},
		{"2026-11-29T10:00:00.5+01:00", time.UTC, utc("2026-11-29T09:00:00.5Z")},
		{"2026-11-29T10:00:00.123456789-05:30", tokyo, utc("2026-11-29T15:30:00.123456789Z")},
		{"2026-11-29t10:00:00z", nil, utc("2026-11-29T10:00:00Z")},
		{"2026-11-29 10:00:00Z", berlin, utc("2026-11-29T10:00:00Z")},
		{"2026-11-29 10:00:00.25+02:00", nil, utc("2026-11-29T08:00:00.25Z")},
		{"  2026-11-29T10:00:00Z\n", nil, utc("2026-11-29T10:00:00Z")},
		// Date and wall clock without offset: read in loc.
		{"2026-11-29 10:00:05", time.UTC, utc("2026-11-29T10:00:05Z")},
		{"2026-11-29 10:00:05", berlin, utc("2026-11-29T09:00:05Z")},
		{"2026-07-01 10:00:05", berlin, utc("2026-07-01T08:00:05Z")}, // summer time
		{"2026-11-29 10:00:05.000000001", tokyo, utc("2026-11-29T01:00:05.000000001Z")},
		{"2026-11-29T10:00:05", newYork, utc("2026-11-29T15:00:05Z")},
		{"2026-11-29 10:00", berlin, utc("2026-11-29T09:00:00Z")},
		{"2026-11-29T10:00", time.UTC, utc("2026-11-29T10:00:00Z")},
		{"2026-11-29", berlin, utc("2026-11-28T23:00:00Z")},
		{"2026-11-29", nil, utc("2026-11-29T00:00:00Z")},
		// DST in Europe/Berlin: 2026-03-29 02:00 CET -> 03:00 CEST;
		// 2026-10-25 03:00 CEST -> 02:00 CET.
		{"2026-03-29 01:59:59", berlin, utc("2026-03-29T00:59:59Z")},
		{"2026-03-29 02:30", berlin, utc("2026-03-29T01:30:00Z")}, // in the gap: moved forward (03:30 CEST)
		{"2026-03-29 03:00", berlin, utc("2026-03-29T01:00:00Z")},
		{"2026-10-25 01:59:59", berlin, utc("2026-10-24T23:59:59Z")},
		{"2026-10-25 02:30", berlin, utc("2026-10-25T00:30:00Z")}, // twice: the earlier (CEST)
		{"2026-10-25 03:00", berlin, utc("2026-10-25T02:00:00Z")},
		// DST in America/New_York: 2026-03-08 02:00 EST -> 03:00 EDT;
		// 2026-11-01 02:00 EDT -> 01:00 EST.
		{"2026-03-08 02:30", newYork, utc("2026-03-08T07:30:00Z")}, // gap: 03:30 EDT
		{"2026-11-01 01:30", newYork, utc("2026-11-01T05:30:00Z")}, // twice: the earlier (EDT)
		// Wall clock alone: today in loc.
		{"10:00:05", time.UTC, utc("2026-11-29T10:00:05Z")},
		{"10:00:05", berlin, utc("2026-11-29T09:00:05Z")},
		{"10:00:05.75", time.UTC, utc("2026-11-29T10:00:05.75Z")},
		{"10:00", tokyo, utc("2026-11-29T01:00:00Z")},
		{"23:30:00", tokyo, utc("2026-11-29T14:30:00Z")},
		{"10:00", kiritimati, utc("2026-11-29T20:00:00Z")}, // "today" in loc: already 30 Nov there
		// Unix time, the unit by magnitude.
		{"0", nil, utc("1970-01-01T00:00:00Z")},
		{"1764410400", berlin, utc("2025-11-29T10:00:00Z")},
		{"1764410400.5", nil, utc("2025-11-29T10:00:00.5Z")},
		{"9223372035", nil, utc("2262-04-11T23:47:15Z")},               // largest seconds within range
		{"100000000000", nil, utc("1973-03-03T09:46:40Z")},             // smallest milliseconds
		{"1764410400123", nil, utc("2025-11-29T10:00:00.123Z")},        // milliseconds
		{"1764410400123.456", nil, utc("2025-11-29T10:00:00.123456Z")}, // ms with fraction
		{"1764410400123456", nil, utc("2025-11-29T10:00:00.123456Z")},  // microseconds
		{"1764410400123456789", nil, utc("2025-11-29T10:00:00.123456789Z")},
		{"100000000000000000", nil, utc("1973-03-03T09:46:40Z")}, // smallest nanoseconds
		{"@1764410400", nil, utc("2025-11-29T10:00:00Z")},
		{"@1764410400.25", nil, utc("2025-11-29T10:00:00.25Z")},
		{"@9223372035", nil, time.Unix(9223372035, 0)}, // @ is always seconds
		// now and relative forms.
		{"now", berlin, now},
		{"NOW", nil, now},
		{"-90m", nil, now.Add(-90 * time.Minute)},
		{"90m", nil, now.Add(-90 * time.Minute)},
		{"+10m", nil, now.Add(10 * time.Minute)},
		{"2h ago", nil, now.Add(-2 * time.Hour)},
		{"1d12h ago", nil, now.Add(-36 * time.Hour)},
		{"now-1d12h", nil, now.Add(-36 * time.Hour)},
		{"now - 1d", nil, now.Add(-24 * time.Hour)},
		{"now+10m", nil, now.Add(10 * time.Minute)},
		{"1d", berlin, now.Add(-24 * time.Hour)},
		{"1.5d", nil, now.Add(-36 * time.Hour)},
		{"-1h30m15.5s", nil, now.Add(-(time.Hour + 30*time.Minute + 15500*time.Millisecond))},
		{"-500ms", nil, now.Add(-500 * time.Millisecond)},
		{"2H AGO", nil, now.Add(-2 * time.Hour)},
	}
	for _, tt := range tests {
		got, err := ParseTime(tt.in, now, tt.loc)
		if err != nil {
			t.Errorf("ParseTime(%q, %v): %v", tt.in, tt.loc, err)
			continue
		}
		if !got.Equal(tt.want) {
			t.Errorf("ParseTime(%q, %v) = %s, want %s", tt.in, tt.loc, got.UTC().Format(time.RFC3339Nano), tt.want.UTC().Format(time.RFC3339Nano))
		}
	}
}

func TestParseTimeBad(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, in := range []string{
		"", " ", "yesterday", "2026-13-01", "2026-02-30", "2026-11-29T25:00:00Z", "2026-11-29T10:00:00+25:00",
		"2026-11-29 10", "10", // "10" is Unix seconds, so check it separately below
		"10:61", "1.2.3", "-", "+", "@", "@-5", "@1e9", "1e9", "0x10", "-1", "--1h", "-+1h", "now-", "now+-1h",
		"nowish", "now-1x", "1w", "ago", " ago", "2h ago ago", "1d-2h", "d", ".d", "1.d", "1h1d",
		"99999999999999999999", "106752d", "2562048h", "NaNd", "infd", "1e3d", "0x1p3d", "1_000d", "١٢٣",
	} {
		if in == "10" {
			continue
		}
		_, err := ParseTime(in, now, time.UTC)
		if err == nil {
			t.Errorf("ParseTime(%q) succeeded, want an error", in)
			continue
		}
		if !errors.Is(err, ErrBadInput) {
			t.Errorf("ParseTime(%q): %v does not wrap ErrBadInput", in, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, "RFC 3339") || !strings.Contains(msg, "2h ago") || !strings.Contains(msg, "@1795946400") {
			t.Errorf("ParseTime(%q): error %q does not name the accepted forms", in, msg)
		}
	}
}

// TestParseTimeRange: times outside what a message can have (Unix
// nanoseconds in an int64) are refused with the range, so no offset, span
// or bucket width between two accepted times overflows a time.Duration.
func TestParseTimeRange(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, in := range []string{
		"0001-01-01T00:00:00Z", "0000-01-01T00:00:00Z", "1969-12-31T23:59:59.999999999Z", "9999-12-31T23:59:59Z",
		"2262-04-11T23:47:16.854775808Z", "99999999999", "@1764410400123", "now-100000d", "now+100000d",
	} {
		_, err := ParseTime(in, now, time.UTC)
		if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "out of range: use a time from 1970-01-01T00:00:00Z to 2262-04-11T23:47:16Z") {
			t.Errorf("ParseTime(%q) = %v, want an out-of-range error", in, err)
		}
	}
	for _, in := range []string{"1970-01-01T00:00:00Z", "0", "2262-04-11T23:47:16.854775807Z", "9223372036854775807"} {
		got, err := ParseTime(in, now, time.UTC)
		if err != nil {
			t.Errorf("ParseTime(%q): %v", in, err)
			continue
		}
		if d := got.Sub(MinTime); d < 0 || MaxTime.Sub(got) < 0 {
			t.Errorf("ParseTime(%q) = %s, outside the range", in, got)
		}
	}
	if d := MaxTime.Sub(MinTime); d != time.Duration(math.MaxInt64) {
		t.Errorf("MaxTime - MinTime = %s, want the largest duration", d)
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"0", 0},
		{"0d", 0},
		{"90s", 90 * time.Second},
		{"1d", 24 * time.Hour},
		{"2d", 48 * time.Hour},
		{"1d12h", 36 * time.Hour},
		{"1.5d", 36 * time.Hour},
		{".5d", 12 * time.Hour},
		{"0.1d", 144 * time.Minute}, // exact, no float rounding
		{"0.000000001d", 86400 * time.Nanosecond},
		{"1.5h", 90 * time.Minute},
		{" 15m ", 15 * time.Minute},
		{"106751d", 106751 * 24 * time.Hour},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "-1h", "+1h", "1d-1h", "1x", "d", "1e2d", "0x1p3d", "106752d", "106751d24h", "9999999999999999999d"} {
		if d, err := ParseDuration(in); err == nil || !errors.Is(err, ErrBadInput) {
			t.Errorf("ParseDuration(%q) = %v, %v; want a bad-input error", in, d, err)
		}
	}
}

func TestLoadLocation(t *testing.T) {
	for _, name := range []string{"", "Local", "local", "UTC", "utc", "Z", "Europe/Berlin", "America/New_York"} {
		if _, err := LoadLocation(name); err != nil {
			t.Errorf("LoadLocation(%q): %v", name, err)
		}
	}
	for _, name := range []string{"Mars/Olympus", "../etc/passwd", "+01:00"} {
		_, err := LoadLocation(name)
		if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), name) {
			t.Errorf("LoadLocation(%q) = %v, want a bad-input error naming it", name, err)
		}
	}
}

// FuzzParseTime checks that ParseTime never panics, that whatever it
// accepts is a valid time, and that any time formatted as RFC 3339 with
// nanoseconds reads back as the same instant.
//
//	go test ./jsutil -run '^$' -fuzz FuzzParseTime -fuzztime 60s
func FuzzParseTime(f *testing.F) {
	for _, s := range []string{
		"2026-11-29T10:00:00Z", "2026-11-29 10:00:05", "10:00:05", "1764410400", "@1764410400.5",
		"now-1d12h", "2h ago", "-90m", "1.5d", "2026-10-25 02:30", "99999999999", "1764410400123456789",
	} {
		f.Add(s, int64(1764410400), uint32(123456789), int16(60))
	}
	f.Add("", int64(-62135596800), uint32(0), int16(-1439))
	f.Add("x", int64(253402300799), uint32(999999999), int16(1439))
	berlin := mustZone(f, "Europe/Berlin")
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string, sec int64, nsec uint32, offMin int16) {
		// Arbitrary input: an error or a time, never a panic.
		for _, loc := range []*time.Location{time.UTC, berlin} {
			if _, err := ParseTime(s, now, loc); err != nil && !errors.Is(err, ErrBadInput) {
				t.Fatalf("ParseTime(%q): error %v does not wrap ErrBadInput", s, err)
			}
		}
		// Round trip: every time from MinTime to MaxTime, with offsets in
		// whole minutes below 24h.
		const minSec, maxSec = 0, 9223372035 // 1970-01-01, 2262-04-11T23:47:15 UTC
		span := int64(maxSec - minSec + 1)
		sec = minSec + ((sec%span)+span)%span
		off := int(offMin) % (24 * 60)
		tm := time.Unix(sec, int64(nsec%1e9)).In(time.FixedZone("", off*60))
		if y := tm.Year(); y < 0 || y > 9999 {
			return // the offset pushed it out of RFC 3339's range
		}
		in := tm.Format(time.RFC3339Nano)
		got, err := ParseTime(in, now, berlin)
		if err != nil {
			t.Fatalf("ParseTime(%q): %v", in, err)
		}
		if !got.Equal(tm) {
			t.Fatalf("ParseTime(%q) = %s, want %s", in, got.Format(time.RFC3339Nano), in)
		}
	})
}
