package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/positions"
	"github.com/jsctl/jsctl/jsutil/reset"
)

// ConsumerResetCmd moves durable consumers to a new position.
type ConsumerResetCmd struct {
	Stream    string   `arg:"" optional:"" predictor:"stream" help:"Stream of the consumers (or --streams; not with --from-file)."`
	Consumers []string `arg:"" optional:"" predictor:"consumer" help:"Consumers to move (or --all)."`

	ToTime     string  `name:"to-time" placeholder:"TIME" predictor:"time" help:"Target: the message at TIME (see --mode; any form listed under Times in jsctl --help)."`
	Mode       string  `name:"mode" enum:"after,before,nearest" default:"after" predictor:"enum" help:"With --to-time: first message at or after it, last at or before it, or nearest (${enum})."`
	ByDuration string  `name:"by-duration" placeholder:"DURATION" help:"Target: the first message at or after now minus DURATION (90m, 2h, 1d12h)."`
	ToSeq      *uint64 `name:"to-seq" placeholder:"N" help:"Target: stream sequence N (sequences start at 1)."`
	ShiftBy    string  `name:"shift-by" placeholder:"±N" help:"Target: N sequences after (+N) or before (-N) the next unacknowledged sequence; write --shift-by=-N."`
	ToEarliest bool    `name:"to-earliest" help:"Target: the stream's first message."`
	ToLatest   bool    `name:"to-latest" help:"Target: after the stream's last message (only new messages)."`
	ToAckFloor bool    `name:"to-ack-floor" help:"Target: the first unacknowledged message (redeliver everything not acknowledged)."`
	ToPrevious bool    `name:"to-previous" help:"Target: undo the consumer's last recorded reset (a deleted consumer is rebuilt from history)."`
	ToConsumer string  `name:"to-consumer" placeholder:"OTHER" predictor:"consumer" help:"Target: where consumer OTHER of the same stream is (see --position)."`
	Position   string  `name:"position" enum:"ack-floor,delivered" default:"ack-floor" predictor:"enum" help:"With --to-consumer: copy OTHER's ack floor (next: what it has not had acknowledged) or its delivered position (next: what it has not delivered) (${enum})."`

	All bool `name:"all" help:"Move every durable consumer of the stream (of each stream with --streams)."`
	streamsFlag
	changeFlags
	Method string `name:"method" enum:"auto,reset,recreate" default:"auto" predictor:"enum" help:"In place with the server's reset API, delete and recreate, or auto per consumer (${enum})."`
	Force  bool   `name:"force" help:"Move busy consumers while clients read from them (prefer --pause), and accept moves that skip messages for good."`
	pauseFlags
	Unpin      bool   `name:"unpin" help:"Release the pinned client of each priority group (policy pinned_client) after the move; the server pins the next client that asks."`
	ForgetAcks bool   `name:"forget-acks" help:"Forget the ack records (jsctl consume) of the replayed range so the handler runs again."`
	AcksBucket string `name:"bucket" default:"JSCTL_ACKS" placeholder:"NAME" help:"Ack-record bucket (jsctl consume's records)."`
	AcksScope  string `name:"scope" placeholder:"NAME" predictor:"scope" help:"Ack-record scope (default STREAM.CONSUMER)."`
	oldAcksBucketFlag
	oldAcksScopeFlag
	Export   string `name:"export" type:"path" placeholder:"FILE" predictor:"file" help:"Write the plan as JSON to FILE."`
	FromFile string `name:"from-file" type:"path" placeholder:"FILE" predictor:"file" help:"Apply a plan saved with --export (no stream, consumers, --all or target)."`

	Interactive  bool `short:"i" name:"interactive" help:"Choose the time on a terminal screen by looking at the messages, review the plan, and apply it with y (as jsctl pick; --to-time sets where the cursor starts)."`
	ShowMessages int  `name:"show-messages" placeholder:"N" help:"List per change up to N of the messages it redelivers (or, moving forward, skips) within the consumer's filters: the first and the last, with their count."`
}

// Help is the long help of consumer reset.
func (ConsumerResetCmd) Help() string {
	return `Moves durable consumers of a stream to a time or sequence. Without --execute
it prints the plan and changes nothing, terminal or not. With --execute, when
stdin and stdout are both a terminal (and without --yes or --json), it shows
the plan and asks before applying: only "y" or "yes" applies, and anything
else or Ctrl-C cancels (exit 6); without a terminal it applies without asking.
--export FILE writes the plan for review and never applies it: apply the file
later with --from-file FILE --execute.

Each consumer is moved in place with the server's consumer reset API where
the server and the consumer's deliver policy allow it, else deleted and
recreated with the same configuration and a new start position (the plan
says which and why). Each move is verified from the server's reply and
recorded, with the consumer's full configuration, in the KV bucket
JSCTL_RESET_HISTORY, so --to-previous can undo it, and rebuild a consumer
that was deleted (see jsctl consumer history).

--to-consumer OTHER takes the target from another consumer of the same stream
(its ack floor + 1, or with --position delivered its delivered + 1); the plan
shows both. Where the two filters differ it warns, and it refuses a move that
would skip messages this consumer's filter takes and OTHER's does not (with
their count; neither consumer handled them) unless --force.

Before it deletes or resets anything, jsctl writes an intent record to
JSCTL_RESET_INTENTS; a run that is killed or cannot finish (a lost reply)
leaves it, and "jsctl consumer recover STREAM --execute" finishes the change.
A permission denial stops with exit code 7 and changes nothing.

Refused (exit code 5): consumers with waiting pull requests or a bound push
subscriber, forward moves on interest or work-queue streams that can
remove messages for good, and a consumer that moved since the plan was made
(plan again; under --force or --pause a move forward, its clients' progress,
is accepted and recorded as the change's start). Pass --pause for a busy consumer (recommended): it is
paused (the server's pause API), its unacknowledged deliveries are waited for
(--drain-timeout, default 30s), then it is moved, verified and resumed (or left
paused with --keep-paused); clients stay connected and receive nothing in
between, then the target first. A run killed meanwhile leaves it paused, never
half moved, and consumer recover finishes the change and resumes it. --force
instead moves it under the clients' feet. Refused even with --force: --method
recreate on a work-queue stream (the server takes only deliver policy all
there), and --to-previous when the last recorded change created the consumer
(it had no earlier position: delete it to undo the create).

With --pause a pull request waiting since before the pause is served from the
new position after the resume only by a reset in place: a recreate ends it
with 409 Consumer Deleted (the plan warns; the client must ask again). While
it waits for deliveries, stderr says so (a live line at a terminal; a plain
line every 10s otherwise; nothing with --json). A server that stops answering
is asked again for up to --retry-for (default 30s), and stderr says so.

The plan shows a consumer's priority groups and pinned clients; a recreate
keeps every priority setting (the pin, server state, is dropped); --unpin
releases the pins after the move.

--streams GLOB (repeatable) with --all moves every durable consumer of each
matching stream, with a STREAM column; --json then prints one document for all
streams, {"streams": [...], "changes": [...]}.

Examples:
  jsctl consumer reset ORDERS billing --to-time "2026-11-29 10:00"
  jsctl consumer reset ORDERS billing --to-time -2h --mode before --execute
  jsctl consumer reset ORDERS --all --by-duration 90m --export plan.json
  jsctl consumer reset --from-file plan.json --execute
  jsctl consumer reset ORDERS billing --to-seq 1200 --method recreate --execute
  jsctl consumer reset ORDERS billing --shift-by=-100 --execute
  jsctl consumer reset ORDERS billing --to-previous --execute
  jsctl consumer reset ORDERS billing-v2 --to-consumer billing --execute
  jsctl consumer reset ORDERS billing --to-time -1h --pause --execute
  jsctl consumer reset ORDERS workers --to-ack-floor --unpin --execute
  jsctl consumer reset --streams 'ORD*' --all --to-latest --pause --keep-paused
  jsctl consumer reset ORDERS billing --to-time -1h --show-messages 10
  jsctl consumer reset ORDERS billing -i`
}

// Validate checks the flag combinations.
func (c *ConsumerResetCmd) Validate() error {
	n := 0
	for _, set := range []bool{c.ToTime != "", c.ByDuration != "", c.ToSeq != nil, c.ShiftBy != "", c.ToEarliest, c.ToLatest, c.ToAckFloor, c.ToPrevious, c.ToConsumer != ""} {
		if set {
			n++
		}
	}
	if err := c.pauseFlags.validate(); err != nil {
		return err
	}
	if err := c.validateShow(n); err != nil || c.Interactive {
		return err
	}
	if c.FromFile != "" {
		if c.Stream != "" || len(c.Consumers) > 0 || c.All || n > 0 || len(c.Streams) > 0 {
			return jsutil.Errorf(jsutil.ErrBadInput, "--from-file takes no stream, consumers, --all, --streams or target: they come from the file")
		}
		if c.Export != "" {
			return jsutil.Errorf(jsutil.ErrBadInput, "--from-file and --export cannot be used together")
		}
		return nil
	}
	if c.Stream == "" && len(c.Streams) == 0 {
		return jsutil.Errorf(jsutil.ErrBadInput, "name a stream (or pass --streams or --from-file)")
	}
	if c.ToSeq != nil && *c.ToSeq == 0 {
		return jsutil.Errorf(jsutil.ErrBadInput, "--to-seq 0: stream sequences start at 1 (use --to-earliest for the stream's first message)")
	}
	if n != 1 {
		return jsutil.Errorf(jsutil.ErrBadInput, "give exactly one target: --to-time, --by-duration, --to-seq, --shift-by, --to-earliest, --to-latest, --to-ack-floor, --to-previous or --to-consumer")
	}
	if err := c.selection(c.Stream, c.Consumers, c.All).Validate(); err != nil {
		return err
	}
	if err := c.changeFlags.validate(); err != nil {
		return err
	}
	if c.Export != "" && c.Execute {
		return jsutil.Errorf(jsutil.ErrBadInput, "--export writes a plan for review and never applies it: drop --execute, then apply the file with --from-file FILE --execute")
	}
	return nil
}

func (c *ConsumerResetCmd) target(env *Env) (reset.Target, error) {
	switch {
	case c.ToTime != "":
		t, err := env.ParseTime(c.ToTime)
		if err != nil {
			return reset.Target{}, err
		}
		return reset.Target{Kind: reset.ToTime, Time: t, Mode: c.Mode}, nil
	case c.ByDuration != "":
		d, err := jsutil.ParseDuration(c.ByDuration)
		if err != nil {
			return reset.Target{}, err
		}
		// The target is a time, and times have one range wherever they come from.
		if err := jsutil.CheckTimeRange(env.Now().Add(-d), fmt.Sprintf("--by-duration %s (now minus %s)", c.ByDuration, c.ByDuration)); err != nil {
			return reset.Target{}, err
		}
		return reset.Target{Kind: reset.ByDuration, Duration: d}, nil
	case c.ToSeq != nil:
		return reset.Target{Kind: reset.ToSeq, Seq: *c.ToSeq}, nil
	case c.ShiftBy != "":
		n, err := strconv.ParseInt(strings.TrimSpace(c.ShiftBy), 10, 64)
		if err != nil {
			return reset.Target{}, jsutil.Errorf(jsutil.ErrBadInput, "--shift-by wants a signed number such as +10 or -10, got %q", c.ShiftBy)
		}
		return reset.Target{Kind: reset.ShiftBy, Shift: n}, nil
	case c.ToEarliest:
		return reset.Target{Kind: reset.ToEarliest}, nil
	case c.ToLatest:
		return reset.Target{Kind: reset.ToLatest}, nil
	case c.ToAckFloor:
		return reset.Target{Kind: reset.ToAckFloor}, nil
	case c.ToConsumer != "":
		return reset.Target{Kind: reset.ToConsumer, Consumer: c.ToConsumer, Position: c.Position}, nil
	}
	return reset.Target{Kind: reset.ToPrevious}, nil
}

func (c *ConsumerResetCmd) options(env *Env) reset.Options {
	o := reset.Options{
		Timeout: env.Globals.Timeout,
		Method:  reset.Method(c.Method), Force: c.Force,
		ForgetAcks: c.ForgetAcks,
		AcksBucket: deprecatedFlag(env, "--acks-bucket", "--bucket", c.OldAcksBucket, c.AcksBucket),
		AcksScope:  deprecatedFlag(env, "--acks-scope", "--scope", c.OldAcksScope, c.AcksScope),
		Now:        env.Now, ShowMessages: c.ShowMessages,
	}
	c.pauseFlags.apply(&o)
	env.waitOptions(&o)
	o.Unpin = c.Unpin
	return o
}

// Run plans, prints, and (with --execute or a confirmation) applies.
func (c *ConsumerResetCmd) Run(ctx context.Context, env *Env) error {
	if c.Interactive {
		return c.runInteractive(ctx, env)
	}
	p, err := env.Printer()
	if err != nil {
		return err
	}
	opts := c.options(env)
	r := &planRun{
		opts: opts, change: c.changeFlags, export: c.Export, set: len(c.Streams) > 0,
		empty: "No streams match " + strings.Join(c.Streams, ", ") + ".",
	}
	var saved []*reset.Plan
	if c.FromFile != "" {
		data, err := readBounded(c.FromFile, "plan")
		if err != nil {
			return err
		}
		if saved, err = reset.ReadPlans(data); err != nil {
			return jsutil.Errorf(jsutil.ErrBadInput, "plan file %q: %w", c.FromFile, err)
		}
		var probe struct {
			Streams []string `json:"streams"`
		}
		_ = json.Unmarshal(data, &probe)
		r.set, r.target = probe.Streams != nil, saved[0].Target
	} else if r.target, err = c.target(env); err != nil {
		return err
	}
	cl, err := env.Client(ctx)
	if err != nil {
		return err
	}
	bar := env.Progress("planning")
	opts.Progress = bar.Set
	switch {
	case saved != nil:
		for _, s := range saved {
			pl, err := reset.Replan(ctx, cl.JS, s, opts)
			if err != nil {
				bar.Done()
				return err
			}
			r.plans = append(r.plans, pl)
		}
	default:
		streams := []string{c.Stream}
		if len(c.Streams) > 0 {
			if streams, err = positions.SelectStreams(ctx, cl.JS, c.selection("", nil, true)); err != nil {
				bar.Done()
				return err
			}
		}
		for _, st := range streams {
			pl, err := reset.NewPlan(ctx, cl.JS, st, c.Consumers, c.All, r.target, opts)
			if err != nil {
				bar.Done()
				return err
			}
			r.plans = append(r.plans, pl)
		}
	}
	bar.Done()
	if len(r.plans) > 0 {
		r.target = r.plans[0].Target // a duration target is a time once planned
	}
	r.title = "target " + r.target.String()
	r.action = "reset consumers on " + streamsText(r.plans)
	return r.run(ctx, env, p, cl.JS)
}

// streamsText names the streams of plans for messages: "ORDERS" or
// `streams "A", "B"`.
func streamsText(plans []*reset.Plan) string {
	var q []string
	for _, pl := range plans {
		q = append(q, fmt.Sprintf("%q", pl.Stream))
	}
	return strings.Join(q, ", ")
}
