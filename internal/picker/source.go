package picker

import (
	"context"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/jsctl/jsctl/jsutil/seek"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"
)

// JetStreamSource answers the picker from jsutil/seek and jsutil/reset,
// the packages seek, stream timeline and consumer reset use.
type JetStreamSource struct {
	JS jetstream.JetStream
	// Opts are the reset options of the plans (Method, Force, Pause...).
	Opts reset.Options
	// Since and Until bound the timeline strip (zero: the range of the
	// messages within the filter).
	Since, Until time.Time
	// Now is the clock; Parse reads typed times (jsctl's time forms).
	Now   func() time.Time
	Parse func(string) (time.Time, error)
	// Progress, when set, is told how far a timeline has been read.
	Progress func(done, total int)
	// Explain, when set, gives a failed request its reason (a request the
	// server's permissions refuse is never answered: see
	// jsutil.Client.Explain).
	Explain func(error) error
}

func (s *JetStreamSource) explain(err error) error {
	if err == nil || s.Explain == nil {
		return err
	}
	return s.Explain(err)
}

// streamsInFlight bounds the stream summaries read at once.
const streamsInFlight = 8

// Streams lists the streams with their message counts and time range.
func (s *JetStreamSource) Streams(ctx context.Context) ([]StreamRow, error) {
	names, err := jsutil.ListStreamNames(ctx, s.JS)
	if err != nil {
		return nil, s.explain(jsutil.Wrap(err, "list streams"))
	}
	rows := make([]StreamRow, len(names))
	var g errgroup.Group
	g.SetLimit(streamsInFlight)
	for i, n := range names {
		g.Go(func() error {
			sum, err := seek.Summarize(ctx, s.JS, n)
			if err != nil {
				return err
			}
			rows[i] = StreamRow{Name: n, Messages: sum.Messages, First: sum.FirstTime, Last: sum.LastTime}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, s.explain(err)
	}
	return rows, nil
}

// Consumers lists the stream's durable consumers (reset.List).
func (s *JetStreamSource) Consumers(ctx context.Context, stream string) ([]ConsumerRow, error) {
	list, err := reset.List(ctx, s.JS, stream, s.Now())
	if err != nil {
		return nil, s.explain(err)
	}
	var rows []ConsumerRow
	for _, c := range list {
		if !c.Durable || c.Missing {
			continue
		}
		rows = append(rows, ConsumerRow{Name: c.Consumer, Delivered: c.Delivered, AckFloor: c.AckFloor,
			AckFloorTime: c.AckFloorTime, Pending: c.Pending, Paused: c.Paused, Filters: c.Filters})
	}
	return rows, nil
}

// Seek is seek.Seek within any of subjects.
func (s *JetStreamSource) Seek(ctx context.Context, stream string, t time.Time, mode seek.Mode, subjects []string, around int) (*seek.Result, error) {
	r, err := seekAny(ctx, jsOne{s.JS, stream}, t, mode, subjects, around)
	return r, s.explain(err)
}

// At is seek.At within any of subjects.
func (s *JetStreamSource) At(ctx context.Context, stream string, seq uint64, subjects []string, around int) (*seek.Result, error) {
	r, err := atAny(ctx, jsOne{s.JS, stream}, seq, subjects, around)
	return r, s.explain(err)
}

// Timeline is seek.Timeline over Since..Until within any of subjects:
// with several, each is counted over the same buckets and the counts
// added up.
func (s *JetStreamSource) Timeline(ctx context.Context, stream string, subjects []string, buckets int) (*seek.TimelineResult, error) {
	opts := seek.TimelineOptions{Since: s.Since, Until: s.Until, Buckets: buckets, Progress: s.Progress}
	if len(subjects) <= 1 {
		if len(subjects) == 1 {
			opts.Subject = subjects[0]
		}
		r, err := seek.Timeline(ctx, s.JS, stream, opts)
		return r, s.explain(err)
	}
	if opts.Since.IsZero() || opts.Until.IsZero() {
		sum, err := seek.Summarize(ctx, s.JS, stream)
		if err != nil {
			return nil, s.explain(err)
		}
		if sum.Messages == 0 {
			return &seek.TimelineResult{Stream: stream, Subject: strings.Join(subjects, ", "), FirstSeq: sum.FirstSeq, LastSeq: sum.LastSeq}, nil
		}
		if opts.Since.IsZero() {
			opts.Since = sum.FirstTime
		}
		if opts.Until.IsZero() {
			opts.Until = sum.LastTime
		}
	}
	var out *seek.TimelineResult
	for _, subj := range subjects {
		o := opts
		o.Subject = subj
		r, err := seek.Timeline(ctx, s.JS, stream, o)
		if err != nil {
			return nil, s.explain(err)
		}
		out = addTimeline(out, r)
	}
	out.Subject = strings.Join(subjects, ", ")
	out.SinceGiven, out.UntilGiven = !s.Since.IsZero(), !s.Until.IsZero()
	return out, nil
}

// addTimeline adds r's counts to sum, bucket by bucket (both counted over
// the same window and buckets).
func addTimeline(sum, r *seek.TimelineResult) *seek.TimelineResult {
	switch {
	case sum == nil || len(sum.Buckets) == 0:
		c := *r
		c.Buckets = append([]seek.Bucket(nil), r.Buckets...)
		if sum != nil {
			c.Requests += sum.Requests
		}
		return &c
	case len(r.Buckets) == 0:
		sum.Requests += r.Requests
		return sum
	}
	for i := range sum.Buckets {
		if i < len(r.Buckets) {
			sum.Buckets[i].Count += r.Buckets[i].Count
			sum.Buckets[i].Sequence = min(sum.Buckets[i].Sequence, r.Buckets[i].Sequence)
		}
	}
	sum.Total += r.Total
	sum.Requests += r.Requests
	return sum
}

// Plan is reset.NewPlan for a sequence target, listing show messages.
func (s *JetStreamSource) Plan(ctx context.Context, stream, consumer string, seq uint64, show int) (*reset.Plan, error) {
	opts := s.Opts
	opts.ShowMessages = show
	pl, err := reset.NewPlan(ctx, s.JS, stream, []string{consumer}, false, reset.Target{Kind: reset.ToSeq, Seq: seq}, opts)
	return pl, s.explain(err)
}

// ParseTime reads a typed time with Parse.
func (s *JetStreamSource) ParseTime(text string) (time.Time, error) { return s.Parse(text) }

// jsOne answers for one filter subject with jsutil/seek.
type jsOne struct {
	js     jetstream.JetStream
	stream string
}

func (o jsOne) seek(ctx context.Context, t time.Time, mode seek.Mode, subject string, around int) (*seek.Result, error) {
	return seek.Seek(ctx, o.js, o.stream, t, seek.Options{Mode: mode, Subject: subject, Around: around})
}

func (o jsOne) at(ctx context.Context, seq uint64, subject string, around int) (*seek.Result, error) {
	return seek.At(ctx, o.js, o.stream, seq, seek.Options{Subject: subject, Around: around})
}
