package replica

import (
	"context"
	"fmt"

	"github.com/jsctl/jsctl/jsutil/seek"
)

// hit is a target message of one source.
type hit struct {
	seq, from uint64 // target sequence, origin sequence
}

// search finds, among the target's messages from source r, the first whose
// origin sequence is ≥ want (found false when none), and the largest origin
// sequence it saw (the last one copied, when found is false).
//
// Binary search over target sequences: a probe at mid reads the first
// message of r at or after mid (stepping over other sources' messages);
// origin sequences grow with target sequences within one source.
func (t *translator) search(ctx context.Context, r sourceRef, want uint64) (best hit, found bool, copied uint64, err error) {
	lo, hi := t.tinfo.State.FirstSeq, t.tinfo.State.LastSeq
	if lo == 0 {
		lo = 1
	}
	cs := newCursors(r.written)
	for lo <= hi {
		mid := lo + (hi-lo)/2
		h, ok, err := t.probe(ctx, r, cs, mid, hi)
		if err != nil {
			return hit{}, false, 0, err
		}
		if !ok {
			hi = mid - 1
			continue
		}
		copied = max(copied, h.from)
		if h.from >= want {
			best, found = h, true
			hi = mid - 1
		} else {
			lo = h.seq + 1
		}
	}
	return best, found, copied, nil
}

// probe returns the first message of source r with sequence in [from, hi].
// It reads the first message at or after from on each subject filter the
// source writes (cs: one cursor each, one request each unless the cursor
// already holds it) and steps over other sources' messages on the same
// subjects, in batches where the server offers them (batch.go).
func (t *translator) probe(ctx context.Context, r sourceRef, cs []*cursor, from, hi uint64) (hit, bool, error) {
	h, _, ok, err := t.probeWith(ctx, r, cs, from, hi, t.current)
	return h, ok, err
}

// probeWith is probe for the messages of source r that keep accepts (by
// their Nats-Stream-Source identity and the message); it also returns the
// message found.
func (t *translator) probeWith(ctx context.Context, r sourceRef, cs []*cursor, from, hi uint64, keep func(ident string, m *seek.Message) bool) (hit, *seek.Message, bool, error) {
	next := make([]*seek.Message, len(cs)) // per filter: first at or after from (nil: none)
	asked := make([]bool, len(cs))
	for from <= hi {
		var m *seek.Message
		for i, c := range cs {
			if !asked[i] || (next[i] != nil && next[i].Sequence < from) {
				n, err := t.next(ctx, c, from, hi, asked[i])
				if err != nil {
					return hit{}, nil, false, err
				}
				next[i], asked[i] = n, true
			}
			if n := next[i]; n != nil && (m == nil || n.Sequence < m.Sequence) {
				m = n
			}
		}
		if m == nil || m.Sequence > hi {
			return hit{}, nil, false, nil
		}
		if o, ok := originOf(m); ok && r.from(o, t.origin.Stream) && keep(o.ident, m) {
			return hit{seq: m.Sequence, from: o.seq}, m, true, nil
		}
		from = m.Sequence + 1
	}
	return hit{}, nil, false, nil
}

// originOf reads a message's Nats-Stream-Source header.
func originOf(m *seek.Message) (origin, bool) {
	for k, v := range m.Header {
		if len(v) > 0 && equalFold(k, sourceHeader) {
			return parseSourceHeader(v[0])
		}
	}
	return origin{}, false
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// sources translates for a stream that sources origin (once or several
// times, with different filters): the earliest target message, over those
// sources, that came from seq or after it.
func (t *translator) sources(ctx context.Context, p *plan, seq uint64, res *Result) error {
	var best hit
	var found bool
	copied := make([]uint64, len(p.sources))
	for i, r := range p.sources {
		h, ok, c, err := t.search(ctx, r, seq)
		if err != nil {
			return err
		}
		copied[i] = c
		if ok && (!found || h.seq < best.seq) {
			best, found = h, true
		}
	}
	if found {
		res.TargetSeq, res.FromSeq, res.StartSeq = best.seq, best.from, best.seq
		if best.from != seq {
			// seq was not copied from the current origin: filtered or
			// deleted there, or the target's copies of it are of an
			// earlier origin (the source went on from its last copy).
			return t.staleBefore(ctx, p, res)
		}
		return nil
	}
	res.StartSeq = t.tinfo.State.LastSeq + 1
	// Nothing from seq on yet: behind when some source still has origin
	// messages to copy.
	for i, r := range p.sources {
		if err := t.checkBehind(ctx, r.filters, copied[i], seq, res); err != nil {
			return err
		}
	}
	return nil
}

// staleBefore marks res inexact when the target holds copies from an
// earlier stream of the origin's name (its first message of any of the
// origin's sources is one): the messages between the position and the one
// found may then be the current origin's that the target never copied.
func (t *translator) staleBefore(ctx context.Context, p *plan, res *Result) error {
	if !t.oid.Known() {
		return nil
	}
	anyCopy := func(string, *seek.Message) bool { return true }
	for _, r := range p.sources {
		_, m, ok, err := t.probeWith(ctx, r, newCursors(r.written), max(t.tinfo.State.FirstSeq, 1), t.tinfo.State.LastSeq, anyCopy)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if o, _ := originOf(m); !t.current(o.ident, m) {
			res.Exact = false
			res.Reason = t.staleReason(m.Sequence, m.Time) + fmt.Sprintf("; the first copy of the current one from sequence %d on is of sequence %d", res.OriginSeq, res.FromSeq)
			return nil
		}
	}
	return nil
}
