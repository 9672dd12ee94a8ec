package audit

import (
	"fmt"
	"math"
	"time"
)

// MaxSkew is how far an event's own time may lie after the time the
// server stored it: the publisher's clock may run ahead of the server's.
const MaxSkew = 5 * time.Minute

// maxSeq is the largest stream sequence an event can name: no stream
// reaches 2^63 messages (292 years at a billion a second).
const maxSeq = math.MaxInt64

// Implausible says which fields of e, stored by the server at stored,
// cannot be true, one sentence each (nil when none). An event is data
// anyone allowed to publish on jsctl.audit.> can write: it is listed
// with these warnings, never silently, and its stored time stands beside
// its own.
func (e *Event) Implausible(stored time.Time) []string {
	var out []string
	late := stored.Add(MaxSkew)
	at := func(what string, t *time.Time) {
		if t != nil && t.After(late) {
			out = append(out, fmt.Sprintf("%s %s is after the server stored the event", what, t.UTC().Format(time.RFC3339Nano)))
		}
	}
	if e.Time.IsZero() {
		out = append(out, "it has no time")
	}
	at("its time", &e.Time)
	at("the stream's creation time", e.Stream.Created)
	at("the consumer's creation time", e.Consumer.Created)
	for _, st := range []struct {
		name string
		s    *State
	}{{"before", e.Before}, {"after", e.After}} {
		if st.s == nil {
			continue
		}
		if st.s.Delivered > maxSeq || st.s.AckFloor > maxSeq {
			out = append(out, fmt.Sprintf("%s: delivered %d, ack floor %d: beyond any stream's sequences", st.name, st.s.Delivered, st.s.AckFloor))
		} else if st.s.AckFloor > st.s.Delivered {
			out = append(out, fmt.Sprintf("%s: ack floor %d above delivered %d", st.name, st.s.AckFloor, st.s.Delivered))
		}
		at(st.name+": the ack floor's time", st.s.AckFloorTime)
	}
	return out
}
