// Package seek finds the stream sequence for a wall-clock time in a NATS
// JetStream stream: the first message at or after the time, the last one at
// or before it, or the nearest, optionally within a subject filter.
//
// The lookup uses the server's time index (a stream message-get request with
// start_time, answered from the store's own binary search) and falls back to
// a client-side binary search over message timestamps on servers that do not
// honour start_time. Neither reads the stream from the start.
//
// Every request seek sends is a read, sent through jsutil's request layer
// (jsutil.Request): one left unanswered, as during a stream leader
// election, is sent again within the retry budget; an answered seek costs
// exactly the requests it needs.
//
// Like the server's own index, seek assumes that message timestamps do not
// decrease as sequences grow, which holds for messages stored by one leader
// whose clock does not step backwards. It checks what it reads on its way
// (every answer and the stream's first and last message): a timestamp lower
// than one at a smaller sequence is reported in Result.SteppedBack, and the
// answer is then not known to be exact (Result.Exact).
package seek

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// Mode says which message a time selects.
type Mode string

// Modes.
const (
	// After selects the first message with time ≥ target (JetStream's
	// DeliverByStartTime semantics). It is the default.
	After Mode = "after"
	// Before selects the last message with time ≤ target.
	Before Mode = "before"
	// Nearest selects the message closest in time to the target. It chooses
	// between After's message and the last message before the target; when
	// both are equally far, After's (the later one) wins, and an exact hit
	// is After's message (the first of several with the same time, so a
	// consumer starting there misses none of them).
	Nearest Mode = "nearest"
)

// Strategy says how the lookup is done.
type Strategy string

// Strategies.
const (
	// Auto uses the server's time index and falls back to Bisect when the
	// server's reply shows that it ignored start_time. It is the default.
	Auto Strategy = "auto"
	// Server uses only the server's time index (start_time); a server that
	// does not honour it is an error wrapping ErrUnsupported.
	Server Strategy = "server"
	// Bisect binary-searches message timestamps on the client with
	// sequence-based message gets, which every JetStream server answers.
	Bisect Strategy = "bisect"
)

// ErrUnsupported marks a server that does not honour start_time in message
// get requests (only returned for Strategy Server).
var ErrUnsupported = errors.New("server does not support seeking by time (start_time)")

// MaxAround is the largest Options.Around: each neighbour is one request
// and is held in memory, so the number is bounded.
const MaxAround = 1000

// Options tune Seek. The zero value seeks the first message at or after the
// target on any subject.
type Options struct {
	Mode     Mode     // After (default), Before or Nearest
	Subject  string   // filter subject, may have wildcards; "" = all
	Strategy Strategy // Auto (default), Server or Bisect
	Around   int      // neighbours on each side to return, at most MaxAround
}

// Message is one stored message.
type Message struct {
	Sequence uint64    `json:"sequence"`
	Time     time.Time `json:"time"`
	Subject  string    `json:"subject"`
	Size     int       `json:"size"` // payload bytes
	Data     []byte    `json:"-"`    // payload (for previews)
	// Header holds the message's headers (for previews), nil when none.
	Header map[string][]string `json:"-"`
}

// Result is the outcome of Seek.
type Result struct {
	Stream  string
	Target  time.Time
	Mode    Mode
	Subject string
	// Sequence is the position a consumer reset to this time would start
	// from. It is always set: the message's sequence, or when no message
	// qualifies LastSeq+1 for After and Nearest and the first sequence for
	// Before.
	Sequence uint64
	// Message is the chosen message, nil when no message qualifies.
	Message *Message
	// Neighbours are, in sequence order, up to Around messages (matching
	// the filter) before Sequence, the chosen message, and up to Around
	// messages after it (after Sequence, from Sequence, when Message is nil).
	Neighbours []Message
	// Used is the strategy actually used (Server or Bisect).
	Used Strategy
	// FirstSeq and LastSeq are the stream state seen.
	FirstSeq, LastSeq uint64
	// Seen are the timestamps the seek read on its way, in sequence order:
	// every message a request answered with (probes and neighbours) and
	// the stream's first and last message as its state reports them.
	Seen []Stamp
	// SteppedBack lists where Seen goes backwards: a timestamp lower than
	// one at a smaller sequence. The search (the server's and the client's
	// alike) assumes timestamps that do not go backwards; where they do,
	// the answer may not be the first message at or after the target.
	// Empty when none was seen (see Exact).
	SteppedBack []StepBack
}

// Exact reports whether the answer holds: no timestamp the seek read went
// backwards. It says nothing of messages it did not read; on a stream
// whose timestamps grow with its sequences (one leader, a clock that does
// not step back) it is always true.
func (r *Result) Exact() bool { return len(r.SteppedBack) == 0 }

// Stamp is a message's sequence and stored time.
type Stamp struct {
	Sequence uint64    `json:"sequence"`
	Time     time.Time `json:"time"`
}

// StepBack is a timestamp (Later, the higher sequence) lower than the
// highest one seen at a smaller sequence (Earlier).
type StepBack struct {
	Earlier Stamp `json:"earlier"`
	Later   Stamp `json:"later"`
}

// Seek finds the message of stream selected by target and opts.
//
// Errors: an unknown stream wraps jsutil.ErrNotFound; an invalid stream
// name, subject filter, mode or strategy wraps jsutil.ErrBadInput; other
// failures are classed by jsutil.Wrap.
func Seek(ctx context.Context, js jetstream.JetStream, stream string, target time.Time, opts Options) (*Result, error) {
	if err := opts.normalize(); err != nil {
		return nil, err
	}
	g, err := newAPIGetter(js, stream)
	if err != nil {
		return nil, err
	}
	return seekWith(ctx, g, target, opts)
}

// normalize fills defaults and checks the options.
func (o *Options) normalize() error {
	switch o.Mode {
	case "":
		o.Mode = After
	case After, Before, Nearest:
	default:
		return jsutil.Errorf(jsutil.ErrBadInput, "unknown seek mode %q: use after, before or nearest", o.Mode)
	}
	switch o.Strategy {
	case "":
		o.Strategy = Auto
	case Auto, Server, Bisect:
	default:
		return jsutil.Errorf(jsutil.ErrBadInput, "unknown seek strategy %q: use auto, server or bisect", o.Strategy)
	}
	if o.Subject != "" {
		if err := jsutil.CheckSubjectFilter("subject filter", o.Subject); err != nil {
			return err
		}
	}
	if o.Around < 0 || o.Around > MaxAround {
		return jsutil.Errorf(jsutil.ErrBadInput, "around must be from 0 to %d, got %d", MaxAround, o.Around)
	}
	return nil
}

// seekWith runs a seek over g; tests use it with a getter that imitates
// older servers.
func seekWith(ctx context.Context, g getter, target time.Time, opts Options) (*Result, error) {
	s := &searcher{g: g, filter: opts.Subject}
	res := &Result{Stream: g.stream(), Target: target, Mode: opts.Mode, Subject: opts.Subject}

	msg, used, err := s.find(ctx, target, opts.Mode, opts.Strategy)
	if err != nil {
		return nil, err
	}
	res.Used = used
	res.FirstSeq, res.LastSeq = s.state.FirstSeq, s.state.LastSeq
	res.Message = msg
	switch {
	case msg != nil:
		res.Sequence = msg.Sequence
	case opts.Mode == Before:
		res.Sequence = max(s.state.FirstSeq, 1)
	default:
		res.Sequence = s.state.LastSeq + 1
	}
	if opts.Around > 0 || msg != nil {
		res.Neighbours, err = s.neighbours(ctx, res.Sequence, msg, opts.Around)
		if err != nil {
			return nil, err
		}
	}
	res.Seen = s.stamps()
	res.SteppedBack = stepsBack(res.Seen)
	return res, nil
}

// searcher holds one seek's view of the stream.
type searcher struct {
	g      getter
	filter string
	state  streamState
	loaded bool
	// rounds counts message-get requests (for tests and benchmarks).
	rounds int
	// seen holds the timestamp of every message a request answered with,
	// in the order read (repeats included).
	seen []Stamp
}

// note records the timestamp of a message read.
func (s *searcher) note(m *Message) {
	if m != nil {
		s.seen = append(s.seen, Stamp{Sequence: m.Sequence, Time: m.Time})
	}
}

// stamps are the timestamps seen, with the stream's first and last
// message as its state reports them, in sequence order, each once.
func (s *searcher) stamps() []Stamp {
	out := make([]Stamp, 0, len(s.seen)+2)
	if st := s.state; st.Msgs > 0 {
		if !st.FirstTime.IsZero() && st.FirstSeq > 0 {
			out = append(out, Stamp{Sequence: st.FirstSeq, Time: st.FirstTime})
		}
		if !st.LastTime.IsZero() && st.LastSeq > 0 {
			out = append(out, Stamp{Sequence: st.LastSeq, Time: st.LastTime})
		}
	}
	out = append(out, s.seen...)
	for i := range out {
		out[i].Time = out[i].Time.UTC()
	}
	slices.SortStableFunc(out, func(a, b Stamp) int { return cmp.Compare(a.Sequence, b.Sequence) })
	return slices.CompactFunc(out, func(a, b Stamp) bool { return a.Sequence == b.Sequence })
}

// stepsBack finds, in stamps sorted by sequence, each timestamp lower than
// the highest one at a smaller sequence.
func stepsBack(stamps []Stamp) []StepBack {
	var out []StepBack
	var top *Stamp
	for i := range stamps {
		st := stamps[i]
		if top != nil && st.Time.Before(top.Time) {
			out = append(out, StepBack{Earlier: *top, Later: st})
			continue
		}
		if top == nil || st.Time.After(top.Time) {
			top = &stamps[i]
		}
	}
	return out
}

// find returns the message selected by target and mode (nil when none
// qualifies) and the strategy used. It also loads s.state.
func (s *searcher) find(ctx context.Context, target time.Time, mode Mode, strategy Strategy) (*Message, Strategy, error) {
	// The message at or after this time is the pivot: After's answer, the
	// one just past Before's answer (start at target+1ns, the first time
	// greater than target), and one of Nearest's two candidates.
	pivotTime := target
	if mode == Before {
		pivotTime = target.Add(time.Nanosecond)
	}
	pivot, used, err := s.firstAtOrAfter(ctx, pivotTime, strategy)
	if err != nil {
		return nil, "", err
	}
	if mode == After || (mode == Nearest && pivot != nil && pivot.Time.Equal(target)) {
		return pivot, used, nil
	}
	end := s.state.LastSeq + 1
	if pivot != nil {
		end = pivot.Sequence
	}
	prev, err := s.lastBefore(ctx, end)
	if err != nil {
		return nil, "", err
	}
	if mode == Before {
		return prev, used, nil
	}
	switch {
	case prev == nil:
		return pivot, used, nil
	case pivot == nil:
		return prev, used, nil
	case pivot.Time.Sub(target) <= target.Sub(prev.Time):
		return pivot, used, nil
	}
	return prev, used, nil
}

// firstAtOrAfter returns the first matching message with time ≥ t.
func (s *searcher) firstAtOrAfter(ctx context.Context, t time.Time, strategy Strategy) (*Message, Strategy, error) {
	if strategy == Bisect {
		if err := s.loadState(ctx); err != nil {
			return nil, "", err
		}
		m, err := s.bisect(ctx, t)
		return m, Bisect, err
	}
	m, honoured, err := s.serverFirstAtOrAfter(ctx, t)
	if err != nil {
		return nil, "", err
	}
	if honoured {
		return m, Server, nil
	}
	if strategy == Server {
		return nil, "", fmt.Errorf("seek stream %q: %w", s.g.stream(), ErrUnsupported)
	}
	m, err = s.bisect(ctx, t)
	return m, Bisect, err
}

// neighbours returns up to n matching messages before pos, the chosen
// message (when not nil) and up to n matching messages after it.
func (s *searcher) neighbours(ctx context.Context, pos uint64, chosen *Message, n int) ([]Message, error) {
	var before []Message
	end := pos
	for len(before) < n {
		m, err := s.lastBefore(ctx, end)
		if err != nil {
			return nil, err
		}
		if m == nil {
			break
		}
		before = append(before, *m)
		end = m.Sequence
	}
	out := make([]Message, 0, len(before)+1+n)
	for i := len(before) - 1; i >= 0; i-- {
		out = append(out, before[i])
	}
	next := pos
	if chosen != nil {
		out = append(out, *chosen)
		next = chosen.Sequence + 1
	}
	for i := 0; i < n; i++ {
		m, err := s.next(ctx, next)
		if err != nil {
			return nil, err
		}
		if m == nil {
			break
		}
		out = append(out, *m)
		next = m.Sequence + 1
	}
	return out, nil
}
