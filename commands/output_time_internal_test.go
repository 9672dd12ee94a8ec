package commands

import (
	"testing"
	"time"
)

// Table cells show a short time: the clock today in --tz, the date added on
// another day; --wide keeps full precision.
func TestTableTime(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no time zone data:", err)
	}
	now := time.Date(2026, 11, 30, 23, 30, 0, 0, time.UTC) // 00:30 on Dec 1 in Berlin
	at := time.Date(2026, 11, 30, 14, 31, 38, 604123456, time.UTC)
	for _, c := range []struct {
		loc  *time.Location
		wide bool
		t    time.Time
		want string
	}{
		{time.UTC, false, at, "14:31:38.604"},
		{time.UTC, false, at.AddDate(0, 0, -1), "2026-11-29 14:31:38.604"},
		{time.UTC, false, at.AddDate(-1, 0, 0), "2025-11-30 14:31:38.604"},
		{berlin, false, at, "2026-11-30 15:31:38.604"}, // yesterday in Berlin
		{berlin, false, now.Add(-10 * time.Minute), "00:20:00.000"},
		{time.UTC, true, at, "2026-11-30 14:31:38.604123456 UTC"},
		{time.UTC, false, time.Time{}, "-"},
		{time.UTC, true, time.Time{}, "-"},
	} {
		p := &Printer{Loc: c.loc, Wide: c.wide, Now: func() time.Time { return now }}
		if got := p.TableTime(c.t); got != c.want {
			t.Errorf("TableTime(%v) in %v, wide %v = %q, want %q", c.t, c.loc, c.wide, got, c.want)
		}
	}
}
