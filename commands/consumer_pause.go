package commands

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/audit"
	"github.com/jsctl/jsctl/jsutil/positions"
)

// ConsumerPauseCmd pauses consumers with the server's pause API.
type ConsumerPauseCmd struct {
	Stream    string   `arg:"" optional:"" predictor:"stream" help:"Stream of the consumers (or --streams)."`
	Consumers []string `arg:"" optional:"" predictor:"consumer" help:"Consumers to pause (or --all)."`
	All       bool     `name:"all" help:"Pause every durable consumer of the stream (of each stream with --streams)."`
	streamsFlag
	Until string `name:"until" placeholder:"TIME" predictor:"time" help:"Pause until TIME (any form listed under Times in jsctl --help, e.g. +2h or \"2026-11-29 12:00\")."`
	For   string `name:"for" placeholder:"DURATION" help:"Pause for DURATION from now (90m, 2h, 1d)."`
	changeFlags
}

// Help is the long help of consumer pause.
func (ConsumerPauseCmd) Help() string {
	return `Pauses consumers with the server's pause API (nats-server 2.11 or later): each
keeps its position and configuration, answers no pull requests and pushes nothing
until the pause ends by itself or "jsctl consumer resume" ends it. Clients stay
connected; pull requests wait. Without --until or --for they stay paused until
resumed. "jsctl consumer ls" and "consumer info" show the pause.

Without --execute it prints the plan (one line per consumer, its pause now and
after) and changes nothing, terminal or not; with --execute at a terminal it
asks first unless --yes, and without a terminal it applies (as consumer reset).
The old immediate form, --yes without --execute, still applies, with a note on
stderr; it will be removed.

--json prints the plan, {"executed":false,"consumers":[{"stream","consumer",
"now":{...},"changes"}]}, and once applied {"executed":true,"consumers":[{"stream",
"consumer","paused","pause_until","until_resumed"}]}.

Examples:
  jsctl consumer pause ORDERS billing --for 30m                   # the plan
  jsctl consumer pause ORDERS billing --for 30m --execute
  jsctl consumer pause ORDERS billing audit --until "2026-11-29 12:00" --execute
  jsctl consumer pause ORDERS --all --execute                     # until jsctl consumer resume
  jsctl consumer pause --streams 'ORD*' --all --for 1h --execute
  jsctl consumer resume ORDERS --all --execute`
}

// Validate checks the flag combination.
func (c *ConsumerPauseCmd) Validate() error {
	if c.Until != "" && c.For != "" {
		return jsutil.Errorf(jsutil.ErrBadInput, "give --until or --for, not both")
	}
	if err := c.selection(c.Stream, c.Consumers, c.All).Validate(); err != nil {
		return err
	}
	return c.changeFlags.validateList()
}

// pauseTarget is a selected consumer with its pause state when planned.
type pauseTarget struct {
	now     *positions.PauseState
	created time.Time
	changes bool
}

// pausePlanItem is one consumer of a pause or resume plan in --json.
type pausePlanItem struct {
	Stream   string                `json:"stream"`
	Consumer string                `json:"consumer"`
	Now      *positions.PauseState `json:"now"`
	Changes  bool                  `json:"changes"`
}

// readPauseTargets reads the pause state of each selected consumer.
func readPauseTargets(ctx context.Context, env *Env, cl *jsutil.Client, sel positions.Selection, verb string) ([]pauseTarget, error) {
	opts := positionsOptions(env, "")
	// A plan that cannot be applied is refused before it is shown.
	if v, old := jsutil.ServerBefore(cl.JS, jsutil.PauseAPISince); old {
		return nil, jsutil.ErrServerLacks(verb+" consumers", "consumer pause API", v, jsutil.PauseAPISince)
	}
	sel.Consumers = jsutil.Unique(sel.Consumers)
	targets, err := positions.Select(ctx, cl.JS, sel, opts)
	if err != nil {
		return nil, fmt.Errorf("%s consumers: %w", verb, err)
	}
	out := make([]pauseTarget, 0, len(targets))
	for _, t := range targets {
		st, created, err := positions.PauseOf(ctx, cl.JS, t.Stream, t.Consumer, opts)
		if err != nil {
			return nil, fmt.Errorf("%s %w", verb, err)
		}
		out = append(out, pauseTarget{now: st, created: created})
	}
	return out, nil
}

// samePauseTarget refuses a consumer deleted and created again since the
// plan read it: the change acts only on the consumer it planned for.
func samePauseTarget(ctx context.Context, env *Env, cl *jsutil.Client, t pauseTarget, verb string) error {
	_, created, err := positions.PauseOf(ctx, cl.JS, t.now.Stream, t.now.Consumer, positionsOptions(env, ""))
	if err != nil {
		return fmt.Errorf("%s %w", verb, err)
	}
	if !created.Equal(t.created) {
		return jsutil.Errorf(jsutil.ErrConflict, "%s consumer %q on %q: it was deleted and created again since the plan was made (created %s, the plan saw %s); nothing changed for it: plan again",
			verb, t.now.Consumer, t.now.Stream, JSONTime(created), JSONTime(t.created))
	}
	return nil
}

// pauseStateText says a consumer's pause state in a plan's cell.
func pauseStateText(p *Printer, st *positions.PauseState) string {
	switch {
	case !st.Paused:
		return "delivering"
	case st.UntilResumed || st.PauseUntil == nil:
		return "paused until resumed"
	}
	return "paused until " + p.TableTime(*st.PauseUntil)
}

// pausePlanDoc is the --json document of a pause or resume plan.
func pausePlanDoc(targets []pauseTarget) any {
	items := []pausePlanItem{}
	for _, t := range targets {
		items = append(items, pausePlanItem{Stream: t.now.Stream, Consumer: t.now.Consumer, Now: t.now, Changes: t.changes})
	}
	return map[string]any{"executed": false, "consumers": items}
}

// pauseRows are the plan rows of a pause or resume: one per consumer.
func pauseRows(p *Printer, targets []pauseTarget, after string) [][]string {
	var rows [][]string
	for _, t := range targets {
		to := after
		if !t.changes {
			to = "unchanged"
		}
		rows = append(rows, []string{t.now.Stream, t.now.Consumer, pauseStateText(p, t.now), to})
	}
	return rows
}

// Run plans the pause and, as the contract decides, applies it.
func (c *ConsumerPauseCmd) Run(ctx context.Context, env *Env) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	until := positions.UntilResumed()
	switch {
	case c.Until != "":
		if until, err = env.ParseTime(c.Until); err != nil {
			return err
		}
		if !until.After(env.Now()) {
			return jsutil.Errorf(jsutil.ErrBadInput, "pause consumers: --until %s is not in the future (write +2h for two hours from now)", c.Until)
		}
	case c.For != "":
		d, err := jsutil.ParseDuration(c.For)
		if err != nil {
			return err
		}
		if d <= 0 {
			return jsutil.Errorf(jsutil.ErrBadInput, "pause consumers: --for wants a positive duration, got %s", c.For)
		}
		until = env.Now().Add(d)
	}
	cl, err := env.Client(ctx)
	if err != nil {
		return err
	}
	targets, err := readPauseTargets(ctx, env, cl, c.selection(c.Stream, c.Consumers, c.All), "pause")
	if err != nil {
		return err
	}
	if len(targets) == 0 {
		return printNoPauseTargets(p, c.Streams)
	}
	forever := until.Equal(positions.UntilResumed())
	after, when := "paused until resumed", "until resumed"
	if !forever {
		after, when = "paused until "+p.TableTime(until), "until "+p.Time(until)
	}
	n := 0
	for i, t := range targets {
		same := t.now.Paused && t.now.PauseUntil != nil && (t.now.PauseUntil.Equal(until) || forever && t.now.UntilResumed)
		targets[i].changes = !same
		if !same {
			n++
		}
	}
	l := &listChange{
		command: "consumer pause", action: "pause consumers on " + selectionText(c.Stream, c.Streams),
		title:   fmt.Sprintf("Pause %s %s:", plural(len(targets), "consumer", "consumers"), when),
		headers: []string{"STREAM", "CONSUMER", "NOW", "AFTER"}, rows: pauseRows(p, targets, after), changes: n,
		plan: func() any { return pausePlanDoc(targets) },
	}
	legacy := c.immediateForm() && c.Stream != "" && len(c.Consumers) == 1
	l.apply = func() error {
		ch, err := env.beginChange(ctx, cl, audit.Pause, pauseObjects(targets))
		if err != nil {
			return err
		}
		var done []*positions.PauseState
		for _, t := range targets {
			obj := auditObject{t.now.Stream, t.now.Consumer}
			if err := samePauseTarget(ctx, env, cl, t, "pause"); err != nil {
				ch.ended(ctx, auditEnd{auditObject: obj, Outcome: audit.Failed, Err: err})
				return ch.close(err)
			}
			st, err := positions.Pause(ctx, cl.JS, t.now.Stream, t.now.Consumer, until, positionsOptions(env, ""))
			if err != nil {
				ch.ended(ctx, auditEnd{auditObject: obj, Outcome: audit.Failed, Err: err})
				return ch.close(err)
			}
			target := "until resumed"
			if !st.UntilResumed && st.PauseUntil != nil {
				target = "until " + st.PauseUntil.UTC().Format(time.RFC3339Nano)
			}
			ch.ended(ctx, auditEnd{auditObject: obj, Outcome: audit.Verified, Target: target})
			if !p.JSON {
				if err := printPauseState(p, st, env.Now()); err != nil {
					return ch.close(err)
				}
			}
			done = append(done, st)
		}
		return ch.close(printPauseDone(p, done, legacy))
	}
	return l.run(ctx, env, p, c.changeFlags)
}

// pauseObjects are the audit objects of a pause or resume: the consumers
// it changes.
func pauseObjects(targets []pauseTarget) []auditObject {
	var out []auditObject
	for _, t := range targets {
		if t.changes {
			out = append(out, auditObject{t.now.Stream, t.now.Consumer})
		}
	}
	return out
}

// printPauseDone prints the --json document of an applied pause or resume:
// {"executed":true,"consumers":[...]}, or for the old immediate form of
// one consumer, its state alone (as before the plan step).
func printPauseDone(p *Printer, done []*positions.PauseState, legacy bool) error {
	if !p.JSON {
		return nil
	}
	if legacy && len(done) == 1 {
		return p.PrintJSON(done[0])
	}
	if done == nil {
		done = []*positions.PauseState{}
	}
	return p.PrintJSON(map[string]any{"executed": true, "consumers": done})
}

// printNoPauseTargets says that a selection (--streams matching no stream,
// or streams without durable consumers) holds nothing to change.
func printNoPauseTargets(p *Printer, patterns []string) error {
	if p.JSON {
		return p.PrintJSON(map[string]any{"executed": false, "consumers": []pausePlanItem{}})
	}
	if len(patterns) > 0 {
		p.Printf("No durable consumers on streams matching %s: nothing to change.\n", Escape(strings.Join(patterns, ", ")))
		return nil
	}
	p.Printf("No durable consumers selected: nothing to change.\n")
	return nil
}

// selectionText names the streams of a selection in messages: "ORDERS" or
// `streams "ORD*"`.
func selectionText(stream string, patterns []string) string {
	if stream != "" {
		return fmt.Sprintf("%q", stream)
	}
	return fmt.Sprintf("streams %q", patterns)
}

// printPauseState reports a consumer's pause state after pause or resume.
func printPauseState(p *Printer, st *positions.PauseState, now time.Time) error {
	if p.JSON {
		return p.PrintJSON(st)
	}
	switch {
	case !st.Paused:
		p.Printf("Consumer %s on %s is not paused: it delivers messages.\n", st.Consumer, st.Stream)
	case st.UntilResumed:
		p.Printf("Paused consumer %s on %s until resumed (jsctl consumer resume %s %s --execute).\n", st.Consumer, st.Stream, st.Stream, st.Consumer)
	default:
		left := st.PauseUntil.Sub(now).Round(time.Second)
		p.Printf("Paused consumer %s on %s until %s (%s from now).\n", st.Consumer, st.Stream, p.Time(*st.PauseUntil), left)
	}
	return nil
}
