package seek

import (
	"context"
	"sync"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"golang.org/x/sync/errgroup"
)

// Counting methods of a timeline, from cheapest to most general.
const (
	// CountBySequence subtracts boundary positions: exact when every
	// sequence between the stream's first and last is a live message and
	// no filter is set. Cost: one seek per boundary.
	CountBySequence = "sequence"
	// CountByDirectGet asks a direct get (batch of 1) from each boundary
	// position for the server's pending count (the Nats-Num-Pending header),
	// which the store computes from its per-subject index. Needs the
	// stream's allow_direct. Cost: one seek and one request per boundary.
	CountByDirectGet = "direct-get"
	// CountByConsumer creates a short-lived ephemeral consumer (memory,
	// R1, no acks) at each boundary position and reads its num_pending,
	// computed the same way, then deletes it. Cost: one seek and two
	// requests per boundary.
	CountByConsumer = "consumer"
)

// TempConsumerInactive is the inactive threshold of the counting
// consumers a timeline creates (named with jsutil.TempConsumerPrefix): each
// is deleted at once, and one left behind by a killed jsctl is removed by
// the server after these few seconds.
const TempConsumerInactive = 5 * time.Second

// TimelineConcurrency bounds the boundary and counting requests a
// timeline has in flight at once.
const TimelineConcurrency = 8

// TimelineOptions tune Timeline.
type TimelineOptions struct {
	Since    time.Time // zero: the first matching message's time
	Until    time.Time // zero: the last matching message's time
	Buckets  int       // zero: 20
	Subject  string    // filter subject, may have wildcards; "" = all
	Strategy Strategy  // how boundaries are sought (Auto by default)
	// Round, when set, puts bucket boundaries on round times: the width is
	// NiceWidth(span, Buckets) and the first boundary is aligned down to a
	// multiple of it (at midnight in Location for widths of a day or more),
	// so there are Buckets or Buckets+1 buckets, the first may start before
	// Since and the last end after Until; counts still cover only [Since,
	// Until]. A window whose buckets would be under a second (span/Buckets
	// < 1s) is divided exactly, as it is without Round.
	Round bool
	// Location is the zone whose midnight aligns day-wide rounded buckets
	// (default UTC).
	Location *time.Location
	// Progress, when set, is called after each boundary is sought and
	// each count is made, with the number done and the number to do (the
	// calls are serialised). Commands draw a progress bar with it.
	Progress func(done, total int)
}

// Bucket is one time slice of a timeline: messages with Start ≤ time < End
// (the last bucket includes End when not rounded), counted only within the
// timeline's window (see TimelineOptions.Round).
type Bucket struct {
	Start, End time.Time
	Count      uint64
	// Sequence is where a consumer with the timeline's filter, reset to
	// Start, would start: what `jsctl seek STREAM Start --subject F` says.
	Sequence uint64
}

// TimelineResult is a stream's message counts per time bucket.
type TimelineResult struct {
	Stream       string
	Subject      string
	Since, Until time.Time
	// SinceGiven and UntilGiven say whether Since and Until came from the
	// options; otherwise they are the first and last matching messages'.
	SinceGiven, UntilGiven bool
	Buckets                []Bucket
	// Width is the buckets' width: the nice width when rounded (a day-wide
	// bucket across a change of clocks is a calendar day), else the
	// window divided by the number of buckets.
	Width  time.Duration
	Total  uint64
	Method string   // CountBySequence, CountByDirectGet or CountByConsumer
	Used   Strategy // how boundaries were sought
	// Requests is the number of message-get and counting requests made.
	Requests          int
	FirstSeq, LastSeq uint64
}

// Timeline counts the messages of stream per time bucket without reading
// them: it seeks each bucket boundary and counts the messages between
// boundaries (see the Count* methods for how, and at what cost).
//
// The window defaults to the first and last matching messages. A boundary
// at or before the first matching message, or after the last, needs no
// request; the others are sought (with the filter, as Seek does) and
// counted with at most TimelineConcurrency requests in flight.
func Timeline(ctx context.Context, js jetstream.JetStream, stream string, opts TimelineOptions) (*TimelineResult, error) {
	if opts.Buckets == 0 {
		opts.Buckets = 20
	}
	if opts.Buckets < 1 || opts.Buckets > 10000 {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "buckets must be from 1 to 10000, got %d", opts.Buckets)
	}
	so := Options{Strategy: opts.Strategy, Subject: opts.Subject}
	if err := so.normalize(); err != nil {
		return nil, err
	}
	g, err := newAPIGetter(js, stream)
	if err != nil {
		return nil, err
	}
	s := &searcher{g: g, filter: opts.Subject}
	if err := s.loadState(ctx); err != nil {
		return nil, err
	}
	res := &TimelineResult{Stream: stream, Subject: opts.Subject, Since: opts.Since, Until: opts.Until,
		SinceGiven: !opts.Since.IsZero(), UntilGiven: !opts.Until.IsZero(),
		FirstSeq: s.state.FirstSeq, LastSeq: s.state.LastSeq, Used: so.Strategy}
	if res.Used == Auto {
		res.Used = Server
	}
	first, err := s.next(ctx, max(s.state.FirstSeq, 1))
	if err != nil {
		return nil, err
	}
	if first == nil {
		res.Requests = s.rounds
		return res, nil // nothing matches: no buckets
	}
	last, err := s.lastBefore(ctx, s.state.LastSeq+1)
	if err != nil {
		return nil, err
	}
	if last == nil {
		last = first
	}
	if !res.SinceGiven {
		res.Since = first.Time
	}
	if !res.UntilGiven {
		res.Until = last.Time
	}
	if res.Until.Before(res.Since) {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "until (%s) is before since (%s)",
			res.Until.UTC().Format(time.RFC3339Nano), res.Since.UTC().Format(time.RFC3339Nano))
	}

	// Boundaries: n+1 times, the last one just past Until so the last
	// bucket includes it. ParseTime bounds times so the span fits. Rounded
	// boundaries (shown) may lie outside the window: the ones sought and
	// counted from are clamped to it.
	n := opts.Buckets
	span := res.Until.Sub(res.Since)
	var shown []time.Time
	res.Width = span / time.Duration(n)
	if w := NiceWidth(span, n); opts.Round && w > 0 {
		shown = roundedBounds(res.Since, res.Until, w, opts.Location)
		n = len(shown) - 1
		res.Width = w
	}
	bounds := make([]time.Time, n+1)
	for i := range n {
		bounds[i] = res.Since.Add(span/time.Duration(n)*time.Duration(i) + span%time.Duration(n)*time.Duration(i)/time.Duration(n))
	}
	bounds[n] = res.Until.Add(time.Nanosecond)
	if shown != nil {
		for i, b := range shown {
			switch past := res.Until.Add(time.Nanosecond); {
			case b.Before(res.Since):
				bounds[i] = res.Since
			case b.After(past):
				bounds[i] = past
			default:
				bounds[i] = b
			}
		}
	}

	switch {
	case opts.Subject == "" && s.state.NumDeleted == 0:
		res.Method = CountBySequence
	case s.state.AllowDirect:
		res.Method = CountByDirectGet
	default:
		res.Method = CountByConsumer
	}
	end := s.state.LastSeq + 1
	positions := make([]uint64, n+1)
	var seek []int // boundaries that need a request
	for i, b := range bounds {
		switch {
		case !b.After(first.Time):
			positions[i] = first.Sequence
		case b.After(last.Time):
			positions[i] = end
		default:
			seek = append(seek, i)
		}
	}
	counted := map[uint64]uint64{end: 0}
	var unique []uint64
	for _, pos := range positions {
		if _, ok := counted[pos]; !ok && pos != 0 {
			counted[pos] = 0
			unique = append(unique, pos)
		}
	}
	p := &timelineProgress{fn: opts.Progress, total: len(seek) + len(unique)}
	var mu sync.Mutex
	requests := s.rounds
	// Phase 1: seek the boundaries inside the matching messages.
	err = parallel(ctx, len(seek), func(ctx context.Context, k int) error {
		i := seek[k]
		ws := &searcher{g: g, filter: opts.Subject, state: s.state, loaded: true}
		m, used, err := ws.firstAtOrAfter(ctx, bounds[i], so.Strategy)
		mu.Lock()
		requests += ws.rounds
		if err == nil {
			res.Used = used
			positions[i] = end
			if m != nil {
				positions[i] = m.Sequence
			}
			if _, ok := counted[positions[i]]; !ok {
				counted[positions[i]] = 0
				unique = append(unique, positions[i])
				p.grow()
			}
		}
		mu.Unlock()
		p.step()
		return err
	})
	if err != nil {
		return nil, err
	}
	// Phase 2: count the matching messages from each distinct position.
	err = parallel(ctx, len(unique), func(ctx context.Context, k int) error {
		mu.Lock()
		pos := unique[k]
		mu.Unlock()
		c, err := countFrom(ctx, js, g, s.state, pos, opts.Subject, res.Method)
		mu.Lock()
		counted[pos] = c
		if res.Method != CountBySequence && pos <= s.state.LastSeq {
			requests++
		}
		mu.Unlock()
		p.step()
		return err
	})
	if err != nil {
		return nil, err
	}
	res.Requests = requests
	for i := range n {
		c := uint64(0)
		if a, b := counted[positions[i]], counted[positions[i+1]]; a > b {
			c = a - b
		}
		start, end := bounds[i], bounds[i+1]
		if i == n-1 {
			end = res.Until
		}
		if shown != nil {
			start, end = shown[i], shown[i+1]
		}
		res.Buckets = append(res.Buckets, Bucket{Start: start, End: end, Count: c, Sequence: positions[i]})
		res.Total += c
	}
	return res, nil
}

// timelineProgress reports a timeline's progress, one call at a time.
type timelineProgress struct {
	mu          sync.Mutex
	fn          func(done, total int)
	done, total int
}

// grow adds one step still to do.
func (p *timelineProgress) grow() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total++
}

func (p *timelineProgress) step() {
	if p.fn == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	p.fn(p.done, p.total)
}

// parallel runs do(ctx, k) for k in [0, n) with at most TimelineConcurrency
// at once and returns the first error (the others are cancelled).
func parallel(ctx context.Context, n int, do func(ctx context.Context, k int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(TimelineConcurrency)
	for k := range n {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return do(gctx, k) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// countFrom returns the number of messages matching subject with sequence
// ≥ pos.
func countFrom(ctx context.Context, js jetstream.JetStream, g *apiGetter, st streamState, pos uint64, subject, method string) (uint64, error) {
	if pos > st.LastSeq {
		return 0, nil
	}
	switch method {
	case CountBySequence:
		return st.LastSeq + 1 - max(pos, st.FirstSeq, 1), nil
	case CountByDirectGet:
		return g.directPending(ctx, pos, subject)
	}
	c, err := js.CreateConsumer(ctx, g.name, jetstream.ConsumerConfig{
		Name:              jsutil.TempConsumerPrefix + nuid.Next(),
		Description:       "jsctl stream timeline (temporary)",
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       pos,
		FilterSubject:     subject,
		AckPolicy:         jetstream.AckNonePolicy,
		MemoryStorage:     true,
		Replicas:          1,
		InactiveThreshold: TempConsumerInactive,
	})
	if err != nil {
		return 0, jsutil.Wrap(err, "count messages of stream %q from sequence %d", g.name, pos)
	}
	np := c.CachedInfo().NumPending
	if err := js.DeleteConsumer(ctx, g.name, c.CachedInfo().Name); err != nil {
		return 0, jsutil.Wrap(err, "delete temporary consumer of stream %q", g.name)
	}
	return np, nil
}

// directPending asks a direct get (batch of one) from seq for the number of
// matching messages at or after seq.
func (g *apiGetter) directPending(ctx context.Context, seq uint64, subject string) (uint64, error) {
	n, err := jsutil.DirectPending(ctx, g.js, g.name, seq, subject, jsutil.RequestOptions{})
	if err != nil {
		return 0, jsutil.Wrap(err, "count messages of stream %q: direct get", g.name)
	}
	return n, nil
}
