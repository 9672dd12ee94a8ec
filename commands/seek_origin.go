package commands

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/replica"
	"github.com/jsctl/jsctl/jsutil/seek"
)

// seek --origin: translate a position of an origin stream to a mirror or a
// stream that sources it (jsutil/replica, docs/failover.md).

// validateOrigin checks --origin and the flags that go with it.
func (c *SeekCmd) validateOrigin() error {
	if _, _, err := parseOriginPos(c.Origin); err != nil {
		return err
	}
	switch {
	case c.Time != "":
		return jsutil.Errorf(jsutil.ErrBadInput, "give a time or --origin STREAM:SEQ, not both")
	case c.Interactive:
		return jsutil.Errorf(jsutil.ErrBadInput, "--origin cannot be used with --interactive")
	case c.Subject != "":
		return jsutil.Errorf(jsutil.ErrBadInput, "--subject cannot be used with --origin (the origin position selects the message)")
	case c.Around < 0 || c.Around > seek.MaxAround:
		return jsutil.Errorf(jsutil.ErrBadInput, "--around must be from 0 to %d (messages on each side), got %d", seek.MaxAround, c.Around)
	}
	return nil
}

// parseOriginPos reads STREAM:SEQ.
func parseOriginPos(s string) (string, uint64, error) {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 {
		return "", 0, jsutil.Errorf(jsutil.ErrBadInput, "--origin %q: give STREAM:SEQ, e.g. ORDERS:1042", s)
	}
	seq, err := strconv.ParseUint(s[i+1:], 10, 64)
	if err != nil || seq == 0 {
		return "", 0, jsutil.Errorf(jsutil.ErrBadInput, "--origin %q: the sequence after ':' must be a number from 1", s)
	}
	if why := jsutil.NameProblem(s[:i]); why != "" {
		return "", 0, jsutil.Errorf(jsutil.ErrBadInput, "--origin %q: invalid stream name %q: %s", s, s[:i], why)
	}
	return s[:i], seq, nil
}

// runOrigin translates the origin position and prints the target's message
// as seek prints one, with the method.
func (c *SeekCmd) runOrigin(ctx context.Context, env *Env) error {
	name, seq, err := parseOriginPos(c.Origin)
	if err != nil {
		return err
	}
	cl, p, err := env.Session(ctx)
	if err != nil {
		return err
	}
	target := replica.Side{JS: cl.JS, Stream: c.Stream}
	var origin replica.Side
	if c.OriginDomain != "" {
		origin, err = replica.SideInDomain(cl.JS, name, c.OriginDomain)
	} else {
		origin, err = replica.OriginVia(ctx, target, name)
	}
	if err != nil {
		return err
	}
	tr, err := replica.Translate(ctx, origin, seq, target)
	if err != nil {
		return err
	}
	res, err := seek.At(ctx, cl.JS, c.Stream, tr.StartSeq, seek.Options{Around: c.Around})
	if err != nil {
		return err
	}
	res.Target = tr.OriginTime
	if res.Target.IsZero() && !tr.OriginUnreachable {
		res.Target = originTime(ctx, origin, seq)
	}
	if p.JSON {
		return p.PrintJSON(seekOriginJSONOf(res, tr))
	}
	return printSeekOrigin(p, res, tr, c.Around)
}

// originTime is the time of the origin's message at seq (or the first after
// it), zero when it cannot be read: it only sets the offsets shown.
func originTime(ctx context.Context, origin replica.Side, seq uint64) time.Time {
	r, err := seek.NewReader(origin.JS, origin.Stream)
	if err != nil {
		return time.Time{}
	}
	m, err := r.Next(ctx, seq, ">")
	if err != nil || m == nil {
		return time.Time{}
	}
	return m.Time
}

// seekOriginJSON is seek --origin's --json output: seek's fields (target is
// the origin message's time, offsets are from it; strategy is "origin") and
// the translation's.
type seekOriginJSON struct {
	seekJSON
	Origin            string `json:"origin"`
	OriginSeq         uint64 `json:"origin_seq"`
	FromSeq           uint64 `json:"from_seq"`
	Method            string `json:"method"`
	Exact             bool   `json:"exact"`
	Reason            string `json:"reason,omitempty"`
	OriginUnreachable bool   `json:"origin_unreachable"`
	// OriginCreated is the origin incarnation the replica's copies were
	// held against (null: not known, not checked).
	OriginCreated *time.Time `json:"origin_created"`
	Requests      int        `json:"requests"`
}

func seekOriginJSONOf(r *seek.Result, tr *replica.Result) seekOriginJSON {
	out := seekOriginJSON{
		seekJSON: seekJSONOf(r), Origin: tr.Origin, OriginSeq: tr.OriginSeq, FromSeq: tr.FromSeq,
		Method: string(tr.Method), Exact: tr.Exact, Reason: tr.Reason,
		OriginUnreachable: tr.OriginUnreachable, OriginCreated: tr.OriginCreated, Requests: tr.Requests,
	}
	out.Strategy = "origin"
	if r.Target.IsZero() {
		out.Target = ""
		if out.Message != nil {
			out.Message.OffsetNS = 0
		}
		for i := range out.Neighbours {
			out.Neighbours[i].OffsetNS = 0
		}
	}
	return out
}

// methodText says how the position was found, in words.
func methodText(tr *replica.Result) string {
	switch {
	case tr.Method != replica.ByTime && !tr.Exact:
		return string(tr.Method) + " (not exact: " + tr.Reason + ")"
	}
	switch tr.Method {
	case replica.Mirror:
		return "mirror (exact: a mirror stores each message at its origin sequence)"
	case replica.Source:
		return "source (exact: from the Nats-Stream-Source header)"
	}
	return "by-time (approximate: " + tr.Reason + "; the first message stored at or after the origin message's time)"
}

func printSeekOrigin(p *Printer, r *seek.Result, tr *replica.Result, around int) error {
	p.Printf("Stream:   %s\n", r.Stream)
	p.Printf("Origin:   %s sequence %d\n", tr.Origin, tr.OriginSeq)
	p.Printf("Method:   %s\n", methodText(tr))
	if tr.OriginUnreachable {
		p.Printf("Note:     %s could not be read; translated from %s's records alone\n", tr.Origin, r.Stream)
	}
	if m := r.Message; m != nil {
		switch { // the sequence is said once, by Sequence: below
		case tr.Method == replica.ByTime:
		case tr.FromSeq == tr.OriginSeq:
			p.Printf("Message:  copied from origin sequence %d\n", tr.FromSeq)
		default:
			p.Printf("Message:  copied from origin sequence %d (the first copied after %d)\n", tr.FromSeq, tr.OriginSeq)
		}
		if r.Target.IsZero() {
			p.Printf("Time:     %s\n", p.Time(m.Time))
		} else {
			p.Printf("Time:     %s, %s\n", p.Time(m.Time), strings.Replace(offsetText(m.Time, r.Target), "the target", "the origin message", 1))
		}
		p.Printf("Subject:  %s\n", Escape(m.Subject))
		p.Printf("Size:     %d bytes\n", m.Size)
		p.Printf("Preview:  %s\n", Preview(m.Data, seekPreviewBytes))
	} else {
		p.Printf("Message:  none yet from origin sequence %d on; a consumer started here gets the next message stored\n", tr.OriginSeq)
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
			mark, strconv.FormatUint(n.Sequence, 10), neighbourOrigin(n, tr), p.TableTime(n.Time),
			n.Subject, strconv.Itoa(n.Size), PreviewCell(n.Data, seekPreviewBytes),
		})
	}
	return p.Table([]string{"", "SEQ", "FROM", "TIME", "SUBJECT", "SIZE", "PREVIEW"}, rows, cutToFit("PREVIEW", "SUBJECT"))
}

// neighbourOrigin is where a neighbour came from: "ORIGIN:SEQ" (a mirror's
// own sequence, or its Nats-Stream-Source header), "-" when not recorded.
//
// A copy of an earlier stream of the origin's name (deleted and created
// again since: jsutil.Identity.CopyOf against the origin the translation
// was held against) is marked "(earlier)".
func neighbourOrigin(m seek.Message, tr *replica.Result) string {
	earlier := func(ident string) string {
		if same, known := jsutil.RecordedStream(tr.Origin, tr.OriginCreated).CopyOf(ident, m.Time); known && !same {
			return " (earlier)"
		}
		return ""
	}
	if tr.Method == replica.Mirror {
		return tr.Origin + ":" + strconv.FormatUint(m.Sequence, 10) + earlier("")
	}
	for k, v := range m.Header {
		if strings.EqualFold(k, "Nats-Stream-Source") && len(v) > 0 {
			f := strings.Fields(v[0])
			if len(f) >= 2 {
				name, _, _ := strings.Cut(f[0], ":")
				mark := ""
				if name == tr.Origin {
					mark = earlier(jsutil.SourceIdentity(v[0]))
				}
				return Escape(name) + ":" + f[1] + mark
			}
		}
	}
	return "-"
}
