package seek

import (
	"context"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Range lists matching messages of stream with from ≤ sequence ≤ to: up to
// first of the earliest ones and up to last of the latest ones, in sequence
// order and without repeats (fewer when the range holds fewer). It reads
// forward with next-by-subject gets and backward with the same gallop as
// the neighbours of a seek, so its cost depends on first+last, not on the
// size of the range.
//
// Errors are classed as Seek's are.
func Range(ctx context.Context, js jetstream.JetStream, stream string, from, to uint64, subject string, first, last int) ([]Message, error) {
	so := Options{Subject: subject}
	if err := so.normalize(); err != nil {
		return nil, err
	}
	g, err := newAPIGetter(js, stream)
	if err != nil {
		return nil, err
	}
	return rangeWith(ctx, g, from, to, subject, first, last)
}

func rangeWith(ctx context.Context, g getter, from, to uint64, subject string, first, last int) ([]Message, error) {
	if from == 0 {
		from = 1
	}
	if to < from {
		return []Message{}, nil
	}
	s := &searcher{g: g, filter: subject}
	if err := s.loadState(ctx); err != nil {
		return nil, err
	}
	var head []Message
	next := from
	for len(head) < first && next <= to {
		m, err := s.next(ctx, next)
		if err != nil {
			return nil, err
		}
		if m == nil || m.Sequence > to {
			break
		}
		head = append(head, *m)
		next = m.Sequence + 1
	}
	var tail []Message
	end := to + 1
	for len(tail) < last && end > next {
		m, err := s.lastBefore(ctx, end)
		if err != nil {
			return nil, err
		}
		if m == nil || m.Sequence < next {
			break
		}
		tail = append(tail, *m)
		end = m.Sequence
	}
	out := head
	for i := len(tail) - 1; i >= 0; i-- {
		out = append(out, tail[i])
	}
	if out == nil {
		out = []Message{}
	}
	return out, nil
}

// Summary is what a stream holds, for lists.
type Summary struct {
	Stream            string
	Messages          uint64
	FirstSeq, LastSeq uint64
	// FirstTime and LastTime are zero when the stream is empty.
	FirstTime, LastTime time.Time
}

// Summarize reads a stream's summary (one stream-info request).
func Summarize(ctx context.Context, js jetstream.JetStream, stream string) (Summary, error) {
	g, err := newAPIGetter(js, stream)
	if err != nil {
		return Summary{}, err
	}
	st, err := g.info(ctx)
	if err != nil {
		return Summary{}, err
	}
	out := Summary{Stream: stream, Messages: st.Msgs, FirstSeq: st.FirstSeq, LastSeq: st.LastSeq}
	if st.Msgs > 0 {
		out.FirstTime, out.LastTime = st.FirstTime, st.LastTime
	}
	return out, nil
}

// parseHeader reads NATS headers ("NATS/1.0\r\nKey: value\r\n\r\n"), nil
// when there are none.
func parseHeader(b []byte) map[string][]string {
	if len(b) == 0 {
		return nil
	}
	lines := strings.Split(string(b), "\r\n")
	h := map[string][]string{}
	for _, l := range lines[1:] {
		k, v, ok := strings.Cut(l, ":")
		if !ok || k == "" {
			continue
		}
		h[k] = append(h[k], strings.TrimSpace(v))
	}
	if len(h) == 0 {
		return nil
	}
	return h
}
