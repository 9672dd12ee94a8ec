package positions

import (
	"fmt"
	"math"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/reset"
)

// A snapshot document read back (from the bucket, or a file) is data: its
// name is its key, and every value a restore or a show acts on is checked
// (checkValues) before use, besides the names and configurations tidy
// checks.

// NameWarning says, for a stored document that names itself otherwise
// than the key it is stored under (NamedAs), that it is taken by its key;
// "" when its name is its key.
func (s *Snapshot) NameWarning(bucket string) string {
	if s.NamedAs == "" {
		return ""
	}
	return fmt.Sprintf("snapshot %q in bucket %s names itself %q: it is listed, shown and restored as %q, its key", s.Name, bucket, s.NamedAs, s.Name)
}

// checkValues refuses (jsutil.ErrBadInput, naming the document) a document
// holding values no snapshot has: times before 1970 or in the future (a
// floor time decides where --by-time restores), a position past the
// largest sequence (the next delivery would wrap to 0), a saved
// configuration that is not its consumer's (reset.RecordedConfigProblem:
// filters, deliver subject).
func (s *Snapshot) checkValues(name string, now time.Time) error {
	bad := func(format string, args ...any) error {
		return jsutil.Errorf(jsutil.ErrBadInput, "snapshot %q%s", name, fmt.Sprintf(format, args...))
	}
	if p := jsutil.RecordedTimeProblem("its time taken", s.Created, now); p != "" {
		return bad(": %s", p)
	}
	for _, ss := range s.Streams {
		for _, t := range []struct {
			what string
			t    *time.Time
		}{{"its creation time", ss.Created}, {"its first message time", ss.FirstTime}, {"its last message time", ss.LastTime}} {
			if p := jsutil.RecordedTimePtrProblem(t.what, t.t, now); p != "" {
				return bad(", stream %q: %s", ss.Name, p)
			}
		}
		for _, cs := range ss.Consumers {
			p := jsutil.RecordedTimeProblem("its creation time", cs.Created, now)
			for _, pos := range []struct {
				what string
				p    Position
			}{{"ack floor", cs.AckFloor}, {"delivered position", cs.Delivered}} {
				switch {
				case p != "":
				case pos.p.StreamSeq == math.MaxUint64:
					p = fmt.Sprintf("its %s is past the largest sequence", pos.what)
				default:
					p = jsutil.RecordedTimePtrProblem("its "+pos.what+" time", pos.p.Time, now)
				}
			}
			if p == "" {
				p = reset.RecordedConfigProblem(cs.Name, cs.Config)
			}
			if p != "" {
				return bad(", consumer %q on stream %q: %s", cs.Name, ss.Name, p)
			}
		}
	}
	return nil
}
