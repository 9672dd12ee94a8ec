package seek

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
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

// TimelineOptions tune Timeline.
type TimelineOptions struct {
	Since    time.Time // zero: the first matching message's time
	Until    time.Time // zero: now
	Buckets  int       // zero: 20
	Subject  string    // filter subject, may have wildcards; "" = all
	Strategy Strategy  // how boundaries are sought (Auto by default)
}

// Bucket is one time slice of a timeline: messages with Start ≤ time < End
// (the last bucket includes End).
type Bucket struct {
	Start, End time.Time
	Count      uint64
	// Sequence is where a consumer reset to Start would start (ignoring
	// the filter).
	Sequence uint64
}

// TimelineResult is a stream's message counts per time bucket.
type TimelineResult struct {
	Stream       string
	Subject      string
	Since, Until time.Time
	Buckets      []Bucket
	Total        uint64
	Method       string   // CountBySequence, CountByDirectGet or CountByConsumer
	Used         Strategy // how boundaries were sought
	// Requests is the number of message-get and counting requests made.
	Requests          int
	FirstSeq, LastSeq uint64
}

// Timeline counts the messages of stream per time bucket without reading
// them: it seeks each bucket boundary and counts the messages between
// boundaries (see the Count* methods for how, and at what cost).
func Timeline(ctx context.Context, js jetstream.JetStream, stream string, opts TimelineOptions) (*TimelineResult, error) {
	if opts.Buckets == 0 {
		opts.Buckets = 20
	}
	if opts.Buckets < 1 || opts.Buckets > 10000 {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "buckets must be from 1 to 10000, got %d", opts.Buckets)
	}
	so := Options{Strategy: opts.Strategy}
	if err := so.normalize(); err != nil {
		return nil, err
	}
	g, err := newAPIGetter(js, stream)
	if err != nil {
		return nil, err
	}
	if opts.Until.IsZero() {
		opts.Until = time.Now()
	}
	s := &searcher{g: g}
	if err := s.loadState(ctx); err != nil {
		return nil, err
	}
	res := &TimelineResult{Stream: stream, Subject: opts.Subject, Since: opts.Since, Until: opts.Until,
		FirstSeq: s.state.FirstSeq, LastSeq: s.state.LastSeq, Used: so.Strategy}
	if res.Since.IsZero() {
		fs := &searcher{g: g, filter: opts.Subject, state: s.state, loaded: true}
		m, err := fs.next(ctx, max(s.state.FirstSeq, 1))
		res.Requests += fs.rounds
		if err != nil {
			return nil, err
		}
		if m == nil {
			return res, nil // nothing matches: no buckets
		}
		res.Since = m.Time
	}
	if res.Until.Before(res.Since) {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "until (%s) is before since (%s)",
			res.Until.UTC().Format(time.RFC3339Nano), res.Since.UTC().Format(time.RFC3339Nano))
	}

	// Boundaries: n+1 times, the last one just past Until so the last
	// bucket includes it.
	n := opts.Buckets
	span := res.Until.Sub(res.Since)
	bounds := make([]time.Time, n+1)
	for i := range n {
		bounds[i] = res.Since.Add(span/time.Duration(n)*time.Duration(i) + span%time.Duration(n)*time.Duration(i)/time.Duration(n))
	}
	bounds[n] = res.Until.Add(time.Nanosecond)

	switch {
	case opts.Subject == "" && s.state.NumDeleted == 0:
		res.Method = CountBySequence
	case s.state.AllowDirect:
		res.Method = CountByDirectGet
	default:
		res.Method = CountByConsumer
	}
	pending := make([]uint64, n+1)
	positions := make([]uint64, n+1)
	for i, b := range bounds {
		m, used, err := s.firstAtOrAfter(ctx, b, so.Strategy)
		if err != nil {
			return nil, err
		}
		res.Used = used
		pos := s.state.LastSeq + 1
		if m != nil {
			pos = m.Sequence
		}
		positions[i] = pos
		if pending[i], err = countFrom(ctx, js, g, s.state, pos, opts.Subject, res.Method); err != nil {
			return nil, err
		}
		if res.Method != CountBySequence && pos <= s.state.LastSeq {
			res.Requests++
		}
	}
	res.Requests += s.rounds
	for i := range n {
		c := uint64(0)
		if pending[i] > pending[i+1] {
			c = pending[i] - pending[i+1]
		}
		end := bounds[i+1]
		if i == n-1 {
			end = res.Until
		}
		res.Buckets = append(res.Buckets, Bucket{Start: bounds[i], End: end, Count: c, Sequence: positions[i]})
		res.Total += c
	}
	return res, nil
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
	if subject == "" {
		subject = ">"
	}
	body := fmt.Appendf(nil, `{"seq":%d,"next_by_subj":%s,"batch":1}`, seq, strconv.Quote(subject))
	msg, err := g.send(ctx, g.prefix+"DIRECT.GET."+g.name, body)
	if err != nil {
		return 0, g.wrap(err)
	}
	if st := msg.Header.Get("Status"); st != "" {
		if st == "404" {
			return 0, nil
		}
		return 0, fmt.Errorf("count messages of stream %q: direct get: status %s %s", g.name, st, msg.Header.Get("Description"))
	}
	np, err := strconv.ParseUint(msg.Header.Get("Nats-Num-Pending"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("count messages of stream %q: direct get reply has no pending count", g.name)
	}
	// The server counts the message it sends out of the pending count.
	return np + 1, nil
}
