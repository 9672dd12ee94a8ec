package seek

import (
	"context"
	"errors"
	"math"
	"time"

	"golang.org/x/sync/errgroup"
)

// subject is the filter as the server takes it: ">" matches every subject.
func (s *searcher) subject() string {
	if s.filter == "" {
		return ">"
	}
	return s.filter
}

// get sends one message-get request and counts it.
func (s *searcher) get(ctx context.Context, req getRequest) (*Message, error) {
	s.rounds++
	m, err := s.g.get(ctx, req)
	s.note(m)
	return m, err
}

// loadState reads the stream's state once.
func (s *searcher) loadState(ctx context.Context) error {
	if s.loaded {
		return nil
	}
	st, err := s.g.info(ctx)
	if err != nil {
		return err
	}
	s.state, s.loaded = st, true
	return nil
}

// next returns the first matching message with sequence ≥ seq, stepping
// over deleted sequences on the server (seq + next_by_subj), or nil.
func (s *searcher) next(ctx context.Context, seq uint64) (*Message, error) {
	return s.get(ctx, getRequest{Seq: seq, NextFor: s.subject()})
}

// serverFirstAtOrAfter asks the server's time index for the first matching
// message with time ≥ t, in one request sent alongside the stream-info
// request (so both cost one round trip). honoured is false when the reply
// shows that the server ignored start_time.
//
// Detection: a server without start_time support ignores the field and
// answers from the first sequence (or, in strict mode, rejects the unknown
// field). A reply whose time is before t cannot come from a server that
// honoured start_time, so it means "unsupported". A reply at or after t is
// correct either way: from an old server it is the first matching message
// of the stream, and since its time is already ≥ t no earlier message
// qualifies, so there is no previous message to check. A "no message"
// reply is also correct either way (an old server finds none only when
// nothing matches at all).
func (s *searcher) serverFirstAtOrAfter(ctx context.Context, t time.Time) (m *Message, honoured bool, err error) {
	st := clampUnixNano(t)
	req := getRequest{StartTime: &st, NextFor: s.subject()}
	var info errgroup.Group
	if !s.loaded {
		info.Go(func() error { return s.loadState(ctx) })
	}
	m, err = s.get(ctx, req)
	if infoErr := info.Wait(); infoErr != nil {
		return nil, false, infoErr
	}
	switch {
	case errors.Is(err, errUnknownField):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	case m != nil && m.Time.Before(t):
		return nil, false, nil
	}
	m, err = s.firstOfTies(ctx, t, m)
	return m, true, err
}

// firstOfTies corrects the server's answer m for a time t equal to the
// stream's last message time. The memory store answers such a time with its
// last message (a shortcut in nats-server's memStore.GetSeqFromTime), not
// with the first of several messages stored in the same nanosecond, which an
// atomic batch in a cluster is (the leader stamps the whole batch once).
// With a filter, the last message may not match, and the server then answers
// "no message" though an earlier message of the same nanosecond matches.
//
// An answer that can come from the shortcut is checked against the matching
// message before it (one more request, needed only for an exact hit or a
// filtered "no message" while the stream holds messages at or after t); when
// that message is at t too, a binary search below it finds the first one.
func (s *searcher) firstOfTies(ctx context.Context, t time.Time, m *Message) (*Message, error) {
	switch {
	case m != nil && !m.Time.Equal(t):
		return m, nil
	case m == nil && (s.filter == "" || s.state.LastTime.Before(t)):
		// Unfiltered, the shortcut always answers with a message.
		return nil, nil
	}
	end := s.state.LastSeq + 1
	if m != nil {
		end = m.Sequence
	}
	prev, err := s.lastBefore(ctx, end)
	if err != nil || prev == nil || prev.Time.Before(t) {
		return m, err
	}
	return s.bisectRange(ctx, t, max(s.state.FirstSeq, 1), prev.Sequence, prev)
}

// clampUnixNano keeps t within what the server reads as Unix nanoseconds.
// No stored message has a time outside that range, so clamping does not
// change the answer.
func clampUnixNano(t time.Time) time.Time {
	lo, hi := time.Unix(0, 0), time.Unix(0, math.MaxInt64)
	switch {
	case t.Before(lo):
		return lo.UTC()
	case t.After(hi):
		return hi.UTC()
	}
	return t.UTC()
}

// bisect finds the first matching message with time ≥ t by a binary search
// over sequences on the client. Each probe is a next-by-sequence get, so
// deleted sequences (interior deletes, purges, expired messages) and
// non-matching subjects are stepped over by the server: a probe at mid
// answers with the first matching message at or after mid.
//
// Invariant: every matching message below lo has a time < t; the answer is
// the first matching message in [lo, hi) with time ≥ t or, when there is
// none, best. Each probe shrinks [lo, hi), so it takes O(log(LastSeq-FirstSeq))
// requests.
func (s *searcher) bisect(ctx context.Context, t time.Time) (*Message, error) {
	return s.bisectRange(ctx, t, max(s.state.FirstSeq, 1), s.state.LastSeq+1, nil)
}

// bisectRange is bisect over [lo, hi), answering best when no matching
// message in the range has a time ≥ t.
func (s *searcher) bisectRange(ctx context.Context, t time.Time, lo, hi uint64, best *Message) (*Message, error) {
	for lo < hi {
		mid := lo + (hi-lo)/2
		m, err := s.next(ctx, mid)
		if err != nil {
			return nil, err
		}
		switch {
		case m == nil || m.Sequence >= hi:
			hi = mid // nothing matches in [mid, hi)
		case !m.Time.Before(t):
			best, hi = m, mid // nothing matches in [mid, m.Sequence)
		default:
			lo = m.Sequence + 1
		}
	}
	return best, nil
}

// lastBefore returns the last matching message with sequence < end, or nil.
//
// There is no "previous message" request, so it gallops backwards: it
// probes next-by-sequence at end-1, end-2, end-4, ... until a probe lands
// on a matching message below end, then binary-searches between that
// message and the previous probe. The walk is bounded: the step doubles, so
// it takes at most log2(end-FirstSeq)+1 probes plus as many halvings (under
// 130 requests for any 64-bit stream), however long the run of interior
// deletes or non-matching messages before end; the usual case (end-1 is a
// live matching message) takes one request.
func (s *searcher) lastBefore(ctx context.Context, end uint64) (*Message, error) {
	first := max(s.state.FirstSeq, 1)
	if end <= first {
		return nil, nil
	}
	hi := end - 1 // the answer is at most hi
	var lo *Message
	for step := uint64(1); ; step *= 2 {
		p := first
		if end-first > step {
			p = end - step
		}
		m, err := s.next(ctx, p)
		if err != nil {
			return nil, err
		}
		if m != nil && m.Sequence < end {
			lo = m
			break
		}
		if p == first {
			return nil, nil
		}
		hi = p - 1 // nothing matches in [p, end)
	}
	for lo.Sequence < hi {
		mid := lo.Sequence + (hi-lo.Sequence+1)/2
		m, err := s.next(ctx, mid)
		if err != nil {
			return nil, err
		}
		if m != nil && m.Sequence <= hi {
			lo = m
		} else {
			hi = mid - 1
		}
	}
	return lo, nil
}
