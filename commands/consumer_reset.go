package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/reset"
)

// ConsumerResetCmd moves durable consumers to a new position.
type ConsumerResetCmd struct {
	Stream    string   `arg:"" optional:"" predictor:"stream" help:"Stream of the consumers (not with --from-file)."`
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

	All        bool   `name:"all" help:"Move every consumer of the stream."`
	Execute    bool   `name:"execute" help:"Apply the plan (without it the plan is only printed)."`
	DryRun     bool   `name:"dry-run" help:"Only print the plan, without asking, even at a terminal (the default without a terminal)."`
	Method     string `name:"method" enum:"auto,reset,recreate" default:"auto" predictor:"enum" help:"In place with the server's reset API, delete and recreate, or auto per consumer (${enum})."`
	Force      bool   `name:"force" help:"Move busy consumers, and move forward on interest or work-queue streams although messages may be removed."`
	ForgetAcks bool   `name:"forget-acks" help:"Forget the ack records (jsctl consume) of the replayed range so the handler runs again."`
	AcksBucket string `name:"acks-bucket" default:"JSCTL_ACKS" placeholder:"NAME" help:"Ack-record bucket."`
	AcksScope  string `name:"acks-scope" placeholder:"NAME" predictor:"scope" help:"Ack-record scope (default STREAM.CONSUMER)."`
	Export     string `name:"export" type:"path" placeholder:"FILE" predictor:"file" help:"Write the plan as JSON to FILE."`
	FromFile   string `name:"from-file" type:"path" placeholder:"FILE" predictor:"file" help:"Apply a plan saved with --export (no other arguments)."`
}

// Help is the long help of consumer reset.
func (ConsumerResetCmd) Help() string {
	return `Moves durable consumers of a stream to a time or sequence. Without --execute
it prints the plan and changes nothing. Only when stdin and stdout are both a
terminal (and without --dry-run, --json or --export) it asks before applying;
only "y" applies, and anything else or Ctrl-C cancels (exit 6). --export FILE
writes the plan for review and never applies it: apply the file later with
--from-file FILE --execute.

Each consumer is moved in place with the server's consumer reset API where
the server and the consumer's deliver policy allow it, else deleted and
recreated with the same configuration and a new start position (the plan
says which and why). Each move is verified from the server's reply and
recorded, with the consumer's full configuration, in the KV bucket
JSCTL_RESET_HISTORY, so --to-previous can undo it, and rebuild a consumer
that was deleted (see jsctl consumer history).

Before it deletes or resets anything, jsctl writes an intent record to
JSCTL_RESET_INTENTS; a run that is killed or cannot finish (a lost reply)
leaves it, and "jsctl consumer recover STREAM --execute" finishes the change.
A permission denial stops with exit code 7 and changes nothing.

Refused without --force (exit code 5): consumers with waiting pull requests
or a bound push subscriber, and forward moves on interest or work-queue
streams that can remove messages for good.

Examples:
  jsctl consumer reset ORDERS billing --to-time "2026-11-29 10:00"
  jsctl consumer reset ORDERS billing --to-time -2h --mode before --execute
  jsctl consumer reset ORDERS --all --by-duration 90m --export plan.json
  jsctl consumer reset --from-file plan.json --execute
  jsctl consumer reset ORDERS billing --to-seq 1200 --method recreate --execute
  jsctl consumer reset ORDERS billing --shift-by=-100 --execute
  jsctl consumer reset ORDERS billing --to-previous --execute`
}

// Validate checks the flag combinations.
func (c *ConsumerResetCmd) Validate() error {
	n := 0
	for _, set := range []bool{c.ToTime != "", c.ByDuration != "", c.ToSeq != nil, c.ShiftBy != "", c.ToEarliest, c.ToLatest, c.ToAckFloor, c.ToPrevious} {
		if set {
			n++
		}
	}
	if c.FromFile != "" {
		if c.Stream != "" || len(c.Consumers) > 0 || c.All || n > 0 {
			return jsutil.Errorf(jsutil.ErrBadInput, "--from-file takes no stream, consumers, --all or target: they come from the file")
		}
		if c.Export != "" {
			return jsutil.Errorf(jsutil.ErrBadInput, "--from-file and --export cannot be used together")
		}
		return nil
	}
	if c.Stream == "" {
		return jsutil.Errorf(jsutil.ErrBadInput, "name a stream (or pass --from-file)")
	}
	if c.ToSeq != nil && *c.ToSeq == 0 {
		return jsutil.Errorf(jsutil.ErrBadInput, "--to-seq 0: stream sequences start at 1 (use --to-earliest for the stream's first message)")
	}
	if n != 1 {
		return jsutil.Errorf(jsutil.ErrBadInput, "give exactly one target: --to-time, --by-duration, --to-seq, --shift-by, --to-earliest, --to-latest, --to-ack-floor or --to-previous")
	}
	if c.All == (len(c.Consumers) > 0) {
		return jsutil.Errorf(jsutil.ErrBadInput, "name one or more consumers, or pass --all (not both)")
	}
	if c.Execute && c.DryRun {
		return jsutil.Errorf(jsutil.ErrBadInput, "--execute and --dry-run cannot be used together")
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
	}
	return reset.Target{Kind: reset.ToPrevious}, nil
}

func (c *ConsumerResetCmd) options(env *Env) reset.Options {
	return reset.Options{
		Timeout: env.Globals.Timeout,
		Method:  reset.Method(c.Method), Force: c.Force,
		ForgetAcks: c.ForgetAcks, AcksBucket: c.AcksBucket, AcksScope: c.AcksScope,
		Now: env.Now,
	}
}

// Run plans, prints, and (with --execute or a confirmation) applies.
func (c *ConsumerResetCmd) Run(ctx context.Context, env *Env) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	opts := c.options(env)
	var saved *reset.Plan
	var target reset.Target
	if c.FromFile != "" {
		data, err := readPlanFile(c.FromFile)
		if err != nil {
			return err
		}
		if saved, err = reset.ReadPlan(data); err != nil {
			return jsutil.Errorf(jsutil.ErrBadInput, "plan file %q: %w", c.FromFile, err)
		}
	} else if target, err = c.target(env); err != nil {
		return err
	}
	cl, err := env.Client(ctx)
	if err != nil {
		return err
	}
	var plan *reset.Plan
	bar := env.Progress("planning")
	opts.Progress = bar.Set
	if saved != nil {
		plan, err = reset.Replan(ctx, cl.JS, saved, opts)
	} else {
		plan, err = reset.NewPlan(ctx, cl.JS, c.Stream, c.Consumers, c.All, target, opts)
	}
	bar.Done()
	if err != nil {
		return err
	}
	warnUnfinished(env, p, plan.Unfinished)
	if err := plan.Err(); err != nil {
		_ = printResetPlan(p, plan, "")
		return err
	}
	if c.Export != "" {
		if err := writePlan(c.Export, plan); err != nil {
			return err
		}
	}
	apply, err := askApply(ctx, env, p, applyRequest{
		Execute: c.Execute, DryRun: c.DryRun, Export: c.Export, Changes: len(plan.Changes),
		Action: fmt.Sprintf("reset consumers on %q", plan.Stream),
		Print:  func(note string) error { return printResetPlan(p, plan, note) },
		Resume: "jsctl consumer reset --from-file " + quoteArgs([]string{c.Export}) + " --execute",
	})
	if err != nil || !apply {
		return err
	}
	bar = env.Progress("resetting consumers")
	opts.Progress = bar.Set
	execErr := reset.Execute(ctx, cl.JS, plan, opts)
	bar.Done()
	if err := printResetPlan(p, plan, ""); err != nil {
		return err
	}
	return execErr
}

// maxPlanBytes bounds a plan file read by --from-file: a plan for a
// thousand consumers is well under 1 MiB, and a file that never ends
// (/dev/zero, a pipe) must not be read until memory runs out.
const maxPlanBytes = 8 << 20

// readPlanFile reads a plan saved with --export, at most maxPlanBytes.
func readPlanFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "read plan file %q: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPlanBytes+1))
	if err != nil {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "read plan file %q: %w", path, err)
	}
	if len(data) > maxPlanBytes {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "plan file %q is larger than %d MiB: it is not a plan written by --export", path, maxPlanBytes>>20)
	}
	return data, nil
}

func writePlan(path string, plan *reset.Plan) error {
	b, err := json.MarshalIndent(plan, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write plan to %q: %w", path, err)
	}
	return nil
}

// printResetPlan prints the plan (or its outcome, once executed) followed
// by note, if any.
func printResetPlan(p *Printer, plan *reset.Plan, note string) error {
	if p.JSON {
		return p.PrintJSON(plan)
	}
	if len(plan.Changes) == 0 {
		p.Printf("No consumers on stream %s.\n", plan.Stream)
		return nil
	}
	defer func() {
		if note != "" {
			p.Printf("%s\n", note)
		}
	}()
	headers := []string{"CONSUMER", "METHOD", "DELIVERED", "ACK FLOOR", "TO", "TO TIME", "REDELIVER", "SKIP", "ACK RECORDS", "STATUS"}
	var rows [][]string
	for _, c := range plan.Changes {
		var to string
		if c.To.Time != nil {
			to = p.Time(*c.To.Time)
		} else {
			to = "-"
		}
		acks := strconv.Itoa(c.AckRecordsInRange)
		if c.AckRecordsForgotten > 0 {
			acks += fmt.Sprintf(" (%d forgotten)", c.AckRecordsForgotten)
		}
		rows = append(rows, []string{
			c.Consumer, string(c.Method), u64(c.From.Delivered), u64(c.From.AckFloor), u64(c.To.Sequence), to,
			u64(c.Redeliver), u64(c.Skip), acks, changeStatus(plan, c),
		})
	}
	p.Printf("Stream %s, target %s:\n", plan.Stream, plan.Target)
	if err := p.Table(headers, rows); err != nil {
		return err
	}
	for _, c := range plan.Changes {
		p.Printf("  %s: %s\n", c.Consumer, c.Reason)
		for _, w := range c.Warnings {
			p.Printf("  %s: warning: %s\n", c.Consumer, w)
		}
		if c.Refused != "" {
			p.Printf("  %s: refused: %s\n", c.Consumer, c.Refused)
		}
		if c.Error != "" {
			p.Printf("  %s: failed: %s\n", c.Consumer, c.Error)
		}
	}
	if len(plan.Skipped) > 0 {
		p.Printf("Skipped ephemeral consumers: %s\n", strings.Join(plan.Skipped, ", "))
	}
	return nil
}

func changeStatus(plan *reset.Plan, c *reset.Change) string {
	switch {
	case c.Refused != "":
		return "refused"
	case c.Restored:
		return "restored"
	case c.Error != "":
		return "failed"
	case c.Verified:
		return "verified"
	case c.Applied:
		return "applied"
	case plan.Executed:
		return "not run"
	}
	return "planned"
}

func u64(n uint64) string { return strconv.FormatUint(n, 10) }
