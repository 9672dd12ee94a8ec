package commands

import "time"

// TableTime formats t for a table cell: the short form "14:31:38.604" for
// a time today in the printer's zone, "2026-11-30 14:31:38.604" on another
// day, so that a table with a time column or two fits 100 columns. With
// --wide it is Time's full precision (nanoseconds and zone). JSON output
// never uses it (JSONTime keeps nanoseconds).
//
// Detail views ("Label: value" lines: seek's Target and Time, consumer
// info) keep Time: they have the room, and their exact value is what one
// copies into --to-time or compares with another tool.
func (p *Printer) TableTime(t time.Time) string {
	if p.Wide {
		return p.Time(t)
	}
	if t.IsZero() {
		return "-"
	}
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	t = t.In(p.Loc)
	ny, nm, nd := now().In(p.Loc).Date()
	if y, m, d := t.Date(); y == ny && m == nm && d == nd {
		return t.Format("15:04:05.000")
	}
	return t.Format("2006-01-02 15:04:05.000")
}

// optTableTime is TableTime for an optional time ("-" when nil).
func optTableTime(p *Printer, t *time.Time) string {
	if t == nil {
		return "-"
	}
	return p.TableTime(*t)
}
