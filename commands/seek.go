package commands

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/seek"
)

// seekPreviewBytes is how much of a payload the human output shows.
const seekPreviewBytes = 48

// SeekCmd finds the stream sequence for a time.
type SeekCmd struct {
	Stream   string `arg:"" predictor:"stream" help:"Stream to search."`
	Time     string `arg:"" optional:"" predictor:"time" help:"Time to look for (any form listed under Times in jsctl --help); with --interactive, where the cursor starts."`
	Mode     string `name:"mode" enum:"after,before,nearest" default:"after" predictor:"enum" help:"Which message the time selects: after (the first at or after it), before (the last at or before it) or nearest (the closest)."`
	Subject  string `name:"subject" placeholder:"FILTER" help:"Only count messages on subjects matching FILTER (wildcards allowed)."`
	Around   int    `name:"around" placeholder:"N" default:"0" help:"Also show N matching messages on each side (at most 1000)."`
	Strategy string `name:"strategy" enum:"auto,server,bisect" default:"auto" predictor:"enum" help:"Lookup: the server's time index, a client-side binary search, or auto (server, falling back to bisect) (${enum})."`

	Interactive bool `short:"i" name:"interactive" help:"Choose the time on a terminal screen by looking at the messages (Enter prints what seek prints for it)."`

	Origin       string `name:"origin" placeholder:"STREAM:SEQ" help:"Instead of a time: find the message of this stream (a mirror or a stream sourcing STREAM) that came from STREAM's sequence SEQ, or the first after it (docs/failover.md)."`
	OriginDomain string `name:"origin-js-domain" placeholder:"DOMAIN" help:"With --origin: reach STREAM in JetStream domain DOMAIN (default: as the stream's mirror or source configuration names it)."`
}

// Help is the long help of seek.
func (SeekCmd) Help() string {
	return `Finds the exact stream sequence for a wall-clock time, using the server's time
index (one request) or, on servers without it, a binary search over message
timestamps. Deleted, purged and expired messages do not confuse it.

"sequence" is where a consumer reset to this time would start: the message
found or, when none qualifies, the stream's next sequence (after, nearest) or
its first sequence (before).

--origin STREAM:SEQ finds instead the message of a mirror or of a stream that
sources STREAM which came from STREAM's sequence SEQ (or the first one copied
after it), exactly from the mirror's sequences or the sources' headers; where
nothing records it, by time, labelled by-time. A replica that has not received
SEQ yet is refused (exit 5) with how far behind it is.

Examples:
  jsctl seek ORDERS "2026-11-29 10:00"
  jsctl seek ORDERS -90m --mode before --around 3
  jsctl seek ORDERS 2026-11-29T10:00:00Z --subject 'orders.eu.>' --json
  jsctl seek ORDERS "2h ago" --mode nearest --strategy bisect
  jsctl seek ORDERS --interactive
  jsctl seek ORDERS_DR --origin ORDERS:1042 --around 2`
}

// Validate checks the flags.
func (c *SeekCmd) Validate() error {
	if c.Origin != "" {
		return c.validateOrigin()
	}
	if c.Time == "" && !c.Interactive {
		return jsutil.Errorf(jsutil.ErrBadInput, "name the time to look for (or pass --interactive to choose it on screen)")
	}
	if c.Around < 0 || c.Around > seek.MaxAround {
		return jsutil.Errorf(jsutil.ErrBadInput, "--around must be from 0 to %d (messages on each side), got %d", seek.MaxAround, c.Around)
	}
	if c.Subject != "" {
		return jsutil.CheckSubjectFilter("--subject", c.Subject)
	}
	return nil
}

// Run seeks and prints the result.
func (c *SeekCmd) Run(ctx context.Context, env *Env) error {
	if c.Interactive {
		return runPickSeek(ctx, env, c)
	}
	if c.Origin != "" {
		return c.runOrigin(ctx, env)
	}
	target, err := env.ParseTime(c.Time)
	if err != nil {
		return err
	}
	cl, p, err := env.Session(ctx)
	if err != nil {
		return err
	}
	res, err := seek.Seek(ctx, cl.JS, c.Stream, target, seek.Options{
		Mode: seek.Mode(c.Mode), Subject: c.Subject, Strategy: seek.Strategy(c.Strategy), Around: c.Around,
	})
	if err != nil {
		return err
	}
	warnSteppedBack(env, res.Stream, res.SteppedBack, "the answer may not be the first message at or after the time")
	if p.JSON {
		return p.PrintJSON(seekJSONOf(res))
	}
	return printSeek(p, res, c.Around)
}

// warnSteppedBack says on stderr (with --json too: its "exact" field says
// it as well) that timestamps the search read go backwards, so its answer,
// which assumes they do not, may be wrong (what says how).
func warnSteppedBack(env *Env, stream string, steps []seek.StepBack, what string) {
	if len(steps) == 0 {
		return
	}
	sb := steps[0]
	more := ""
	if len(steps) > 1 {
		more = fmt.Sprintf(" (and %d more)", len(steps)-1)
	}
	fmt.Fprintf(env.Stderr, "jsctl: warning: the timestamps of stream %s go backwards: sequence %d is stamped %s, before sequence %d's %s%s; seek assumes they never do, so %s (docs/seek.md, \"When the answer is exact\")\n",
		Escape(stream), sb.Later.Sequence, JSONTime(sb.Later.Time), sb.Earlier.Sequence, JSONTime(sb.Earlier.Time), more, what)
}

// seekMessageJSON is one message in seek's JSON.
type seekMessageJSON struct {
	Sequence uint64 `json:"sequence"`
	Time     string `json:"time"`
	Subject  string `json:"subject"`
	Size     int    `json:"size"`
	// OffsetNS is the message time minus the target, in nanoseconds.
	OffsetNS int64  `json:"offset_ns"`
	Preview  string `json:"preview"`
}

// seekJSON is seek's --json output (design.md "seek").
type seekJSON struct {
	Stream     string            `json:"stream"`
	Target     string            `json:"target"`
	Mode       string            `json:"mode"`
	Subject    string            `json:"subject"`
	Sequence   uint64            `json:"sequence"`
	Message    *seekMessageJSON  `json:"message"`
	Neighbours []seekMessageJSON `json:"neighbours"`
	Strategy   string            `json:"strategy"`
	FirstSeq   uint64            `json:"first_seq"`
	LastSeq    uint64            `json:"last_seq"`
	// Exact is false when a timestamp the search read is lower than one at
	// a smaller sequence (SteppedBack lists them, Seen is every timestamp
	// read): the answer may then not be the first message at or after the
	// target.
	Exact       bool            `json:"exact"`
	SteppedBack []stepBackJSON  `json:"stepped_back,omitempty"`
	Seen        []seekStampJSON `json:"seen,omitempty"`
}

// seekStampJSON is a sequence and its stored time.
type seekStampJSON struct {
	Sequence uint64 `json:"sequence"`
	Time     string `json:"time"`
}

// stepBackJSON is a timestamp (later, the higher sequence) lower than one
// at a smaller sequence (earlier).
type stepBackJSON struct {
	Earlier seekStampJSON `json:"earlier"`
	Later   seekStampJSON `json:"later"`
}

func stampJSON(s seek.Stamp) seekStampJSON {
	return seekStampJSON{Sequence: s.Sequence, Time: JSONTime(s.Time)}
}

// steppedBackJSON is steps for JSON, nil when there are none.
func steppedBackJSON(steps []seek.StepBack) []stepBackJSON {
	var out []stepBackJSON
	for _, sb := range steps {
		out = append(out, stepBackJSON{Earlier: stampJSON(sb.Earlier), Later: stampJSON(sb.Later)})
	}
	return out
}

func seekJSONOf(r *seek.Result) seekJSON {
	msg := func(m seek.Message) seekMessageJSON {
		return seekMessageJSON{
			Sequence: m.Sequence, Time: JSONTime(m.Time), Subject: m.Subject, Size: m.Size,
			OffsetNS: m.Time.Sub(r.Target).Nanoseconds(), Preview: Preview(m.Data, seekPreviewBytes),
		}
	}
	out := seekJSON{
		Stream: r.Stream, Target: JSONTime(r.Target), Mode: string(r.Mode), Subject: r.Subject,
		Sequence: r.Sequence, Neighbours: []seekMessageJSON{}, Strategy: string(r.Used),
		FirstSeq: r.FirstSeq, LastSeq: r.LastSeq,
	}
	if r.Message != nil {
		m := msg(*r.Message)
		out.Message = &m
	}
	out.Exact = r.Exact()
	if !out.Exact {
		out.SteppedBack = steppedBackJSON(r.SteppedBack)
		for _, st := range r.Seen {
			out.Seen = append(out.Seen, stampJSON(st))
		}
	}
	for _, n := range r.Neighbours {
		out.Neighbours = append(out.Neighbours, msg(n))
	}
	return out
}

// offsetText says how far t is from the target, in words.
func offsetText(t, target time.Time) string {
	d := t.Sub(target)
	switch {
	case d == 0:
		return "exactly at the target"
	case d > 0:
		return d.String() + " after the target"
	}
	return (-d).String() + " before the target"
}

// shortOffset is offsetText for a table cell.
// shortOffset is a FROM TARGET cell: to the millisecond in a table, to
// the nanosecond with --wide.
func shortOffset(p *Printer, t, target time.Time) string {
	d := t.Sub(target)
	if !p.Wide && (d >= time.Millisecond || d <= -time.Millisecond) {
		d = d.Round(time.Millisecond)
	}
	if d > 0 {
		return "+" + d.String()
	}
	return d.String()
}

func printSeek(p *Printer, r *seek.Result, around int) error {
	filter := ""
	if r.Subject != "" {
		filter = fmt.Sprintf(" on subjects %q", r.Subject)
	}
	p.Printf("Stream:   %s\n", r.Stream)
	p.Printf("Target:   %s (%s)\n", p.Time(r.Target), r.Mode)
	if m := r.Message; m != nil { // the sequence is said once, by Sequence: below
		if r.Subject != "" {
			p.Printf("Filter:   subjects %q\n", r.Subject)
		}
		p.Fitf("Time:     %s, %s\n", p.Time(m.Time), offsetText(m.Time, r.Target))
		p.Printf("Subject:  %s\n", Escape(m.Subject))
		p.Printf("Size:     %d bytes\n", m.Size)
		p.Printf("Preview:  %s\n", Preview(m.Data, seekPreviewBytes))
	} else {
		var why string
		switch r.Mode {
		case seek.Before:
			why = "no message%s at or before the target; a consumer reset to it starts at the first sequence"
		case seek.After:
			why = "no message%s at or after the target; a consumer reset to it starts with the next message stored"
		default:
			why = "no message%s in the stream; a consumer reset to it starts with the next message stored"
		}
		p.Printf("Message:  "+why+"\n", filter)
	}
	p.Printf("Sequence: %d\n", r.Sequence)
	if around == 0 || len(r.Neighbours) == 0 {
		return nil
	}
	p.Printf("\n")
	rows := make([][]string, 0, len(r.Neighbours))
	for _, n := range r.Neighbours {
		mark := ""
		if r.Message != nil && n.Sequence == r.Message.Sequence {
			mark = ">"
		}
		rows = append(rows, []string{
			mark, strconv.FormatUint(n.Sequence, 10), p.TableTime(n.Time), shortOffset(p, n.Time, r.Target),
			n.Subject, strconv.Itoa(n.Size), PreviewCell(n.Data, seekPreviewBytes),
		})
	}
	return p.Table([]string{"", "SEQ", "TIME", "FROM TARGET", "SUBJECT", "SIZE", "PREVIEW"}, rows, cutToFit("PREVIEW", "SUBJECT"))
}
