package commands

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil/positions"
	"github.com/jsctl/jsctl/jsutil/reset"
)

// ConsumerLsCmd lists consumers with their positions and lag.
type ConsumerLsCmd struct {
	Stream string `arg:"" optional:"" predictor:"stream" help:"Stream whose consumers to list (or --streams)."`
	streamsFlag
}

// Help is the long help of consumer ls.
func (ConsumerLsCmd) Help() string {
	return `Lists each consumer's position as a stream sequence and as the time of that
message, and its lag: messages not yet acknowledged, and how far behind real
time its ack floor is. --streams GLOB lists the consumers of every matching
stream, with a STREAM column when there is more than one. --json prints full
records (configuration included).

A consumer with a change left unfinished by an interrupted run is named in a
warning on stderr (in --json, its "unfinished_change" field), with the
command that finishes it; one that such a change deleted is listed as
"missing" ("missing": true).

Examples:
  jsctl consumer ls ORDERS
  jsctl consumer ls --streams 'ORD*' --streams PAYMENTS
  jsctl consumer ls ORDERS --json`
}

// Validate checks that one stream is named or selected by pattern.
func (c *ConsumerLsCmd) Validate() error {
	return c.selection(c.Stream, nil, true).Validate()
}

// Run lists the consumers.
func (c *ConsumerLsCmd) Run(ctx context.Context, env *Env) error {
	cl, p, err := env.Session(ctx)
	if err != nil {
		return err
	}
	streams, err := positions.SelectStreams(ctx, cl.JS, c.selection(c.Stream, nil, true))
	if err != nil {
		return err
	}
	list := []*reset.Status{}
	for _, st := range streams {
		l, bad, err := reset.ListChecked(ctx, cl.JS, st, env.Now())
		if err != nil {
			return err
		}
		warnSkipped(env, bad)
		list = append(list, l...)
	}
	for _, s := range list {
		warnUnknown(env, s)
	}
	if p.JSON {
		return p.PrintJSON(list)
	}
	var pending []reset.Unfinished
	for _, s := range list {
		if s.Unfinished != nil {
			pending = append(pending, *s.Unfinished)
		}
	}
	warnUnfinished(env, p, pending)
	if len(list) == 0 {
		switch {
		case c.Stream != "":
			p.Printf("No consumers on stream %s.\n", c.Stream)
		case len(streams) == 0:
			p.Printf("No streams match %s.\n", strings.Join(c.Streams, ", "))
		default:
			p.Printf("No consumers on streams %s.\n", strings.Join(streams, ", "))
		}
		return nil
	}
	multi := len(streams) > 1
	var rows [][]string
	for _, s := range list {
		row := []string{
			s.Consumer, consumerKind(s), u64(s.Delivered), u64(s.AckFloor), optTableTime(p, s.AckFloorTime),
			u64(s.Pending), strconv.Itoa(s.AckPending), strconv.Itoa(s.Waiting),
			u64(s.LagMessages), lagText(s.LagNS), yesNo(s.Paused),
		}
		if s.Missing {
			row = []string{s.Consumer, "missing", "-", "-", "-", "-", "-", "-", "-", "-", "-"}
		}
		if multi {
			row = append([]string{s.Stream}, row...)
		}
		rows = append(rows, row)
	}
	headers := []string{"CONSUMER", "TYPE", "DELIVERED", "ACK FLOOR", "ACK FLOOR TIME", "PENDING", "ACK PENDING", "WAITING", "LAG", "LAG TIME", "PAUSED"}
	if multi {
		headers = append([]string{"STREAM"}, headers...)
	}
	return p.Table(headers, rows, wideOnly("ACK FLOOR TIME", "PENDING", "WAITING"))
}

func consumerKind(s *reset.Status) string {
	k := "pull"
	if s.Push {
		k = "push"
	}
	if !s.Durable {
		k += " (ephemeral)"
	}
	return k
}

func optTime(p *Printer, t *time.Time) string {
	if t == nil {
		return "-"
	}
	return p.Time(*t)
}

// lagText is a lag time for a table: "unknown" when it could not be
// measured (warnUnknown says why).
func lagText(ns *int64) string {
	switch {
	case ns == nil:
		return "unknown"
	case *ns <= 0:
		return "0s"
	}
	return time.Duration(*ns).Round(time.Millisecond).String()
}

// warnUnknown says on stderr, once per consumer, which of its figures
// could not be measured and why (in --json they are null, and listed in
// its "unknown" field).
func warnUnknown(env *Env, s *reset.Status) {
	for _, u := range s.Unknown {
		fmt.Fprintf(env.Stderr, "jsctl: warning: consumer %s on %s: %s\n", Escape(s.Consumer), Escape(s.Stream), TermSafe(u.String()))
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
