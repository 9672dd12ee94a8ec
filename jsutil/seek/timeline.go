package seek

import (
	"context"
	"errors"
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
	// RoundWidth(Since, Until, Buckets, Location), the narrowest round width
	// with which the window fits in Buckets+1 buckets, and the first
	// boundary is aligned down to a multiple of it (at midnight in Location
	// for widths of a day or more), so there are at most Buckets+1 buckets
	// (fewer when the next narrower round width needs more); the first may
	// start before Since and the last end after Until; counts still cover
	// only [Since, Until]. A window whose buckets would be under a second (span/Buckets
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
	// SteppedBack lists the timestamps the boundary seeks read that go
	// backwards (see Result.SteppedBack): where there are any, a bucket's
	// boundary, and so its count, may be off.
	SteppedBack []StepBack
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
	first, last, err := timelineWindow(ctx, s, res)
	if err != nil {
		return nil, err
	}
	if first == nil {
		res.Requests = s.rounds
		return res, nil // nothing matches: no buckets
	}
	bounds, shown := timelineBounds(res, opts)
	res.Method = countMethod(opts.Subject, s.state)
	if res.Method == CountByDirectGet && jsutil.DirectGetsRefused(ctx, stream) {
		res.Method = CountByConsumer
	}
	run := newTimelineRun(js, g, s, so.Strategy, res, bounds, first, last, opts.Progress)
	if err := run.seekBounds(ctx); err != nil {
		return nil, err
	}
	err = run.countPositions(ctx)
	if res.Method == CountByDirectGet && errors.Is(err, jsutil.ErrPermission) && ctx.Err() == nil {
		// Direct gets refused (at once: the run's refusals end the
		// request): count with temporary consumers instead.
		jsutil.DirectGetRefused(ctx, js, stream, "counting with temporary consumers instead")
		res.Method = CountByConsumer
		for range run.unique {
			run.progress.Grow() // counted again
		}
		err = run.countPositions(ctx)
	}
	if err != nil {
		return nil, err
	}
	res.Requests = run.requests
	run.fillBuckets(shown)
	run.note(s)
	res.SteppedBack = stepsBack(run.seen.stamps())
	return res, nil
}

// timelineWindow finds the first and last matching messages (first nil:
// none matches) and sets the window's ends the options left open.
func timelineWindow(ctx context.Context, s *searcher, res *TimelineResult) (first, last *Message, err error) {
	first, err = s.next(ctx, max(s.state.FirstSeq, 1))
	if err != nil || first == nil {
		return nil, nil, err
	}
	last, err = s.lastBefore(ctx, s.state.LastSeq+1)
	if err != nil {
		return nil, nil, err
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
		return nil, nil, jsutil.Errorf(jsutil.ErrBadInput, "until (%s) is before since (%s)",
			res.Until.UTC().Format(time.RFC3339Nano), res.Since.UTC().Format(time.RFC3339Nano))
	}
	return first, last, nil
}

// timelineBounds returns the n+1 boundaries that are sought and counted
// from, the last one just past Until so the last bucket includes it, and,
// when rounded, the boundaries shown (which may lie outside the window:
// the ones sought are clamped to it). ParseTime bounds times so the span
// fits. It sets res.Width.
func timelineBounds(res *TimelineResult, opts TimelineOptions) (bounds, shown []time.Time) {
	n := opts.Buckets
	span := res.Until.Sub(res.Since)
	res.Width = span / time.Duration(n)
	if w := RoundWidth(res.Since, res.Until, n, opts.Location); opts.Round && w > 0 {
		shown = roundedBounds(res.Since, res.Until, w, opts.Location)
		n = len(shown) - 1
		res.Width = w
	}
	past := res.Until.Add(time.Nanosecond)
	bounds = make([]time.Time, n+1)
	for i := range n {
		bounds[i] = res.Since.Add(span/time.Duration(n)*time.Duration(i) + span%time.Duration(n)*time.Duration(i)/time.Duration(n))
	}
	bounds[n] = past
	for i, b := range shown {
		switch {
		case b.Before(res.Since):
			bounds[i] = res.Since
		case b.After(past):
			bounds[i] = past
		default:
			bounds[i] = b
		}
	}
	return bounds, shown
}

// countMethod is the cheapest exact way to count the stream's messages
// matching subject.
func countMethod(subject string, st streamState) string {
	switch {
	case subject == "" && st.NumDeleted == 0:
		return CountBySequence
	case st.AllowDirect:
		return CountByDirectGet
	}
	return CountByConsumer
}

// timelineRun is the work of one timeline after its window is known:
// the stream position of each boundary and the count from each distinct
// position, done concurrently.
type timelineRun struct {
	js       jetstream.JetStream
	g        *apiGetter
	state    streamState
	filter   string
	strategy Strategy
	res      *TimelineResult
	bounds   []time.Time
	end      uint64 // the position past the last message
	seek     []int  // boundaries that need a request
	progress *jsutil.Tally

	mu        sync.Mutex
	seen      searcher          // the timestamps read by every seek (its seen and state)
	positions []uint64          // per boundary
	counted   map[uint64]uint64 // matching messages from each position
	unique    []uint64          // the distinct positions to count from
	requests  int
}

// newTimelineRun places the boundaries at or before the first matching
// message, or after the last, without a request; the others are sought.
func newTimelineRun(js jetstream.JetStream, g *apiGetter, s *searcher, strategy Strategy, res *TimelineResult, bounds []time.Time, first, last *Message, progress func(done, total int)) *timelineRun {
	r := &timelineRun{js: js, g: g, state: s.state, filter: s.filter, strategy: strategy, res: res, bounds: bounds,
		end: s.state.LastSeq + 1, positions: make([]uint64, len(bounds)), requests: s.rounds}
	r.counted = map[uint64]uint64{r.end: 0}
	r.seen.state = s.state
	for i, b := range bounds {
		switch {
		case !b.After(first.Time):
			r.positions[i] = first.Sequence
		case b.After(last.Time):
			r.positions[i] = r.end
		default:
			r.seek = append(r.seek, i)
		}
	}
	for _, pos := range r.positions {
		r.addPosition(pos)
	}
	r.progress = jsutil.NewTally(progress, len(r.seek)+len(r.unique))
	return r
}

// note keeps the timestamps ws read. The caller holds mu, or is alone.
func (r *timelineRun) note(ws *searcher) {
	r.seen.seen = append(r.seen.seen, ws.seen...)
}

// addPosition notes a position to count from; it says whether it is new.
// The caller holds mu, or is alone.
func (r *timelineRun) addPosition(pos uint64) bool {
	if _, ok := r.counted[pos]; ok || pos == 0 {
		return false
	}
	r.counted[pos] = 0
	r.unique = append(r.unique, pos)
	return true
}

// seekBounds seeks the boundaries inside the matching messages.
func (r *timelineRun) seekBounds(ctx context.Context) error {
	return parallel(ctx, len(r.seek), func(ctx context.Context, k int) error {
		i := r.seek[k]
		ws := &searcher{g: r.g, filter: r.filter, state: r.state, loaded: true}
		m, used, err := ws.firstAtOrAfter(ctx, r.bounds[i], r.strategy)
		r.mu.Lock()
		r.note(ws)
		r.requests += ws.rounds
		if err == nil {
			r.res.Used = used
			r.positions[i] = r.end
			if m != nil {
				r.positions[i] = m.Sequence
			}
			if r.addPosition(r.positions[i]) {
				r.progress.Grow()
			}
		}
		r.mu.Unlock()
		r.progress.Step()
		return err
	})
}

// countPositions counts the matching messages from each distinct position.
func (r *timelineRun) countPositions(ctx context.Context) error {
	return parallel(ctx, len(r.unique), func(ctx context.Context, k int) error {
		r.mu.Lock()
		pos := r.unique[k]
		r.mu.Unlock()
		c, err := countFrom(ctx, r.js, r.g, r.state, pos, r.filter, r.res.Method)
		r.mu.Lock()
		r.counted[pos] = c
		if r.res.Method != CountBySequence && pos <= r.state.LastSeq {
			r.requests++
		}
		r.mu.Unlock()
		r.progress.Step()
		return err
	})
}

// fillBuckets makes the buckets from the counts (shown: the rounded
// boundaries, when rounded).
func (r *timelineRun) fillBuckets(shown []time.Time) {
	res, n := r.res, len(r.bounds)-1
	for i := range n {
		c := uint64(0)
		if a, b := r.counted[r.positions[i]], r.counted[r.positions[i+1]]; a > b {
			c = a - b
		}
		start, end := r.bounds[i], r.bounds[i+1]
		if i == n-1 {
			end = res.Until
		}
		if shown != nil {
			start, end = shown[i], shown[i+1]
		}
		res.Buckets = append(res.Buckets, Bucket{Start: start, End: end, Count: c, Sequence: r.positions[i]})
		res.Total += c
	}
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
	name := jsutil.TempConsumerPrefix + nuid.Next()
	wctx, stop := jsutil.EndOnRefusalPrefix(ctx, jsutil.APIPrefix(js.Options())+"CONSUMER.CREATE."+g.name+"."+name)
	c, err := js.CreateConsumer(wctx, g.name, jetstream.ConsumerConfig{
		Name:              name,
		Description:       "jsctl stream timeline (temporary)",
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       pos,
		FilterSubject:     subject,
		AckPolicy:         jetstream.AckNonePolicy,
		MemoryStorage:     true,
		Replicas:          1,
		InactiveThreshold: TempConsumerInactive,
	})
	err = jsutil.RefusedCause(wctx, err)
	stop()
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
