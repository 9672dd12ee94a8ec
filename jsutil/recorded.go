package jsutil

import (
	"fmt"
	"strings"
	"time"
)

// Records are data. Anything read back from one of jsctl's buckets (or a
// file a user saved) was written by whoever may write there, so its values
// are checked before anything acts on them: names are names a server can
// hold, subjects are subjects and not the server's own API, times lie
// between 1970 and a little past this machine's clock, and numbers are in
// range. These helpers say what is wrong with one value ("" when nothing
// is); each record type's reader checks its own fields with them and
// reports an unusable record by its key.

// RecordSkew is how far ahead of this machine's clock a time recorded by
// another machine or server may lie (their clocks may run ahead); a
// recorded time further ahead is implausible.
const RecordSkew = 24 * time.Hour

// RecordedTimeProblem says what makes t, read from a record as what, an
// impossible time, or "": before 1970 (the zero time is for the caller to
// judge) or more than RecordSkew after now.
func RecordedTimeProblem(what string, t time.Time, now time.Time) string {
	switch {
	case t.IsZero():
		return ""
	case t.Before(MinTime):
		return fmt.Sprintf("%s %s is before 1970", what, t.UTC().Format(time.RFC3339Nano))
	case t.After(now.Add(RecordSkew)):
		return fmt.Sprintf("%s %s lies in the future (this machine's clock says %s)", what, t.UTC().Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339))
	}
	return ""
}

// RecordedTimePtrProblem is RecordedTimeProblem for an optional time.
func RecordedTimePtrProblem(what string, t *time.Time, now time.Time) string {
	if t == nil {
		return ""
	}
	return RecordedTimeProblem(what, *t, now)
}

// reservedPrefixes are the subjects of the server's own APIs and of the
// system account: a subject read from a record never names one.
var reservedPrefixes = []string{"$JS.", "$JSC.", "$KV.", "$O.", "$SYS.", "$NRG.", "$MQTT."}

// RecordedSubjectProblem says what makes subject, read from a record as
// what (a push consumer's deliver subject), unusable as a subject jsctl or
// the server publishes to, or "": it must be a subject without wildcards
// (CheckSubjectFilter's rules) and not one of the server's own API
// subjects ($JS., $KV., $SYS., ...), which a record could otherwise make a
// request of.
func RecordedSubjectProblem(what, subject string) string {
	if subject == "" {
		return fmt.Sprintf("%s is empty", what)
	}
	if err := CheckSubjectFilter(what, subject); err != nil {
		return err.Error()
	}
	for _, tok := range strings.Split(subject, ".") {
		if tok == "*" || tok == ">" {
			return fmt.Sprintf("%s %q holds a wildcard", what, subject)
		}
	}
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(subject, p) {
			return fmt.Sprintf("%s %q is a subject of the server's own API (%s>)", what, subject, p)
		}
	}
	return ""
}
