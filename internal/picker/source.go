package picker

import (
	"context"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/jsctl/jsctl/jsutil/seek"
	"github.com/nats-io/nats.go/jetstream"
)

// Around is how many neighbours the picker shows on each side.
const Around = 2

// JetStreamSource answers the picker from jsutil/seek and jsutil/reset,
// the packages seek, stream timeline and consumer reset use.
type JetStreamSource struct {
	JS jetstream.JetStream
	// Opts are the reset options of the plans (Method, Force, Pause...).
	Opts reset.Options
	// Since and Until bound the timeline strip (zero: the stream's range).
	Since, Until time.Time
	// Now is the clock; Parse reads typed times (jsctl's time forms).
	Now   func() time.Time
	Parse func(string) (time.Time, error)
}

// Streams lists the streams with their message counts and time range.
func (s *JetStreamSource) Streams(ctx context.Context) ([]StreamRow, error) {
	names, err := jsutil.ListStreamNames(ctx, s.JS)
	if err != nil {
		return nil, jsutil.Wrap(err, "list streams")
	}
	rows := make([]StreamRow, 0, len(names))
	for _, n := range names {
		sum, err := seek.Summarize(ctx, s.JS, n)
		if err != nil {
			return nil, err
		}
		rows = append(rows, StreamRow{Name: n, Messages: sum.Messages, First: sum.FirstTime, Last: sum.LastTime})
	}
	return rows, nil
}

// Consumers lists the stream's durable consumers (reset.List).
func (s *JetStreamSource) Consumers(ctx context.Context, stream string) ([]ConsumerRow, error) {
	list, err := reset.List(ctx, s.JS, stream, s.Now())
	if err != nil {
		return nil, err
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

// Seek is seek.Seek with Around neighbours.
func (s *JetStreamSource) Seek(ctx context.Context, stream string, t time.Time, mode seek.Mode, subject string) (*seek.Result, error) {
	return seek.Seek(ctx, s.JS, stream, t, seek.Options{Mode: mode, Subject: subject, Around: Around})
}

// Timeline is seek.Timeline over Since..Until.
func (s *JetStreamSource) Timeline(ctx context.Context, stream, subject string, buckets int) (*seek.TimelineResult, error) {
	return seek.Timeline(ctx, s.JS, stream, seek.TimelineOptions{Since: s.Since, Until: s.Until, Buckets: buckets, Subject: subject})
}

// Plan is reset.NewPlan for a time target, listing show messages.
func (s *JetStreamSource) Plan(ctx context.Context, stream, consumer string, t time.Time, mode seek.Mode, show int) (*reset.Plan, error) {
	opts := s.Opts
	opts.ShowMessages = show
	return reset.NewPlan(ctx, s.JS, stream, []string{consumer}, false, reset.Target{Kind: reset.ToTime, Time: t, Mode: string(mode)}, opts)
}

// ParseTime reads a typed time with Parse.
func (s *JetStreamSource) ParseTime(text string) (time.Time, error) { return s.Parse(text) }
