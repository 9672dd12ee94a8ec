package commands

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/seek"
)

// timelineBarWidth is the width of the longest bar.
const timelineBarWidth = 40

// StreamTimelineCmd shows message counts per time bucket.
type StreamTimelineCmd struct {
	Stream   string `arg:"" predictor:"stream" help:"Stream to chart."`
	Since    string `name:"since" placeholder:"TIME" predictor:"time" help:"Start of the chart (default: the first matching message's time)."`
	Until    string `name:"until" placeholder:"TIME" predictor:"time" help:"End of the chart, included (default: the last matching message's time)."`
	Buckets  int    `name:"buckets" placeholder:"N" default:"20" help:"Most time buckets wanted: the chart has at most N+1 buckets, of the narrowest round width that fits."`
	Subject  string `name:"subject" placeholder:"FILTER" help:"Only count messages on subjects matching FILTER (wildcards allowed)."`
	Strategy string `name:"strategy" enum:"auto,server,bisect" default:"auto" predictor:"enum" help:"How bucket boundaries are sought: auto, server or bisect, as in seek."`
}

// Help is the long help of stream timeline.
func (StreamTimelineCmd) Help() string {
	return `Draws how many messages arrived in each time bucket, so you can see where
traffic changed before picking a time for seek or consumer reset. It does not
read the messages: it seeks each bucket boundary (as jsctl seek does) and counts
between boundaries by sequence (no filter, no interior deletes), else with the
server's pending count (direct get when the stream allows it, otherwise a
short-lived ephemeral consumer per boundary). SEQ is where a consumer with the
same filter, reset to the bucket's start, would begin (what jsctl seek STREAM
START --subject F says).

The chart spans the first to the last matching message unless --since or
--until say otherwise; the header says which window is shown and why. At a
terminal a progress bar shows while many boundaries are sought.

Buckets start on round times: the width is the narrowest of 1s, 2s, 5s, 10s, 15s,
30s, 1m, 2m, 5m, 10m, 15m, 30m, 1h, 2h, 3h, 6h, 12h, 1d or whole days with which
the window fits in N+1 buckets, the first starting at the window's start rounded
down to a multiple of the width (at midnight in --tz for a day or more). So the
chart has at most N+1 buckets: N or N+1 where a width of the list fits so, fewer
where the next narrower one would need more than N+1 (a 65-minute window with
--buckets 10 has 7 buckets of 10m, as 5m would need 14). The first bucket may start
before the window and the last end after it; only messages inside the window are
counted. When the buckets would be under a second (the window divided by --buckets),
the window is divided exactly into N buckets instead.

Examples:
  jsctl stream timeline ORDERS
  jsctl stream timeline ORDERS --since -6h --buckets 24
  jsctl stream timeline ORDERS --since "2026-11-29 09:00" --until "2026-11-29 10:00" --subject 'orders.eu.>' --json`
}

// Validate checks the flags.
func (c *StreamTimelineCmd) Validate() error {
	if c.Buckets < 1 || c.Buckets > 10000 {
		return jsutil.Errorf(jsutil.ErrBadInput, "--buckets must be from 1 to 10000, got %d", c.Buckets)
	}
	if c.Subject != "" {
		return jsutil.CheckSubjectFilter("--subject", c.Subject)
	}
	return nil
}

// Run counts and draws.
func (c *StreamTimelineCmd) Run(ctx context.Context, env *Env) error {
	opts := seek.TimelineOptions{Buckets: c.Buckets, Subject: c.Subject, Strategy: seek.Strategy(c.Strategy), Round: true}
	var err error
	if opts.Location, err = env.Location(); err != nil {
		return err
	}
	if c.Since != "" {
		if opts.Since, err = env.ParseTime(c.Since); err != nil {
			return err
		}
	}
	if c.Until != "" {
		if opts.Until, err = env.ParseTime(c.Until); err != nil {
			return err
		}
	}
	cl, p, err := env.Session(ctx)
	if err != nil {
		return err
	}
	bar := env.Progress("seeking bucket boundaries")
	opts.Progress = bar.Set
	res, err := seek.Timeline(ctx, cl.JS, c.Stream, opts)
	bar.Done()
	if err != nil {
		return err
	}
	warnSteppedBack(env, res.Stream, res.SteppedBack, "bucket boundaries, and so counts, may be off")
	if p.JSON {
		return p.PrintJSON(timelineJSONOf(res))
	}
	return printTimeline(p, res)
}

type timelineBucketJSON struct {
	Start    string `json:"start"`
	End      string `json:"end"`
	Count    uint64 `json:"count"`
	Sequence uint64 `json:"sequence"`
}

type timelineJSON struct {
	Stream  string `json:"stream"`
	Subject string `json:"subject"`
	Since   string `json:"since"`
	Until   string `json:"until"`
	// SinceFrom and UntilFrom say where the window's ends came from:
	// "option" (--since, --until) or "first_message" / "last_message".
	SinceFrom string               `json:"since_from"`
	UntilFrom string               `json:"until_from"`
	Total     uint64               `json:"total"`
	WidthNS   int64                `json:"width_ns"`
	Buckets   []timelineBucketJSON `json:"buckets"`
	Method    string               `json:"method"`
	Strategy  string               `json:"strategy"`
	Requests  int                  `json:"requests"`
	FirstSeq  uint64               `json:"first_seq"`
	LastSeq   uint64               `json:"last_seq"`
	// Exact is false when timestamps the boundary seeks read go
	// backwards (listed in SteppedBack).
	Exact       bool           `json:"exact"`
	SteppedBack []stepBackJSON `json:"stepped_back,omitempty"`
}

func timelineJSONOf(r *seek.TimelineResult) timelineJSON {
	out := timelineJSON{
		Stream: r.Stream, Subject: r.Subject, Since: JSONTime(r.Since), Until: JSONTime(r.Until),
		SinceFrom: "first_message", UntilFrom: "last_message",
		Total: r.Total, WidthNS: int64(r.Width), Buckets: []timelineBucketJSON{}, Method: r.Method, Strategy: string(r.Used),
		Requests: r.Requests, FirstSeq: r.FirstSeq, LastSeq: r.LastSeq,
		Exact: len(r.SteppedBack) == 0, SteppedBack: steppedBackJSON(r.SteppedBack),
	}
	if r.SinceGiven {
		out.SinceFrom = "option"
	}
	if r.UntilGiven {
		out.UntilFrom = "option"
	}
	for _, b := range r.Buckets {
		out.Buckets = append(out.Buckets, timelineBucketJSON{Start: JSONTime(b.Start), End: JSONTime(b.End), Count: b.Count, Sequence: b.Sequence})
	}
	return out
}

// timelineBar draws count against the largest count; any message shows.
func timelineBar(count, most uint64) string {
	if count == 0 || most == 0 {
		return ""
	}
	n := int((count*timelineBarWidth + most - 1) / most)
	return strings.Repeat("█", max(n, 1))
}

func printTimeline(p *Printer, r *seek.TimelineResult) error {
	what := "all subjects"
	if r.Subject != "" {
		what = fmt.Sprintf("subjects %q", r.Subject)
	}
	if len(r.Buckets) == 0 {
		if r.Subject == "" {
			p.Printf("Stream %s has no messages.\n", r.Stream)
		} else {
			p.Printf("Stream %s has no messages on %s.\n", r.Stream, what)
		}
		return nil
	}
	width := timelineWidthText(r.Width)
	p.Fitf("Stream %s, %s: %d messages from %s to %s\n", r.Stream, what, r.Total, p.Time(r.Since), p.Time(r.Until))
	p.Printf("Window: %s\n", timelineWindow(r))
	p.Printf("%d buckets of %s, counted by %s (%d requests)\n\n", len(r.Buckets), width, r.Method, r.Requests)
	var most uint64
	for _, b := range r.Buckets {
		most = max(most, b.Count)
	}
	rows := make([][]string, 0, len(r.Buckets))
	for _, b := range r.Buckets {
		rows = append(rows, []string{p.TableTime(b.Start), strconv.FormatUint(b.Sequence, 10), strconv.FormatUint(b.Count, 10), timelineBar(b.Count, most)})
	}
	return p.Table([]string{"START", "SEQ", "COUNT", ""}, rows)
}

// timelineWidthText is a bucket width without trailing zero units ("30m",
// "1h", "2d"; an exact division to the microsecond).
func timelineWidthText(d time.Duration) string {
	if d >= 24*time.Hour {
		return DurationText(d)
	}
	s := d.Round(time.Microsecond).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// timelineWindow says why the chart spans what it spans.
func timelineWindow(r *seek.TimelineResult) string {
	matching := "message"
	if r.Subject != "" {
		matching = "matching message"
	}
	switch {
	case !r.SinceGiven && !r.UntilGiven:
		return fmt.Sprintf("the first to the last %s (--since and --until change it)", matching)
	case r.SinceGiven && !r.UntilGiven:
		return fmt.Sprintf("--since to the last %s (--until changes the end)", matching)
	case !r.SinceGiven:
		return fmt.Sprintf("the first %s to --until (--since changes the start)", matching)
	}
	return "--since to --until"
}
