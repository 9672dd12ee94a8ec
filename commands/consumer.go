package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/audit"
	"github.com/jsctl/jsctl/jsutil/positions"
	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/nats-io/nats.go/jetstream"
)

// ConsumerCmd groups the consumer commands.
type ConsumerCmd struct {
	Ls       ConsumerLsCmd       `cmd:"" help:"List consumers with their positions and lag."`
	Info     ConsumerInfoCmd     `cmd:"" help:"Show one consumer's position, lag and configuration."`
	Reset    ConsumerResetCmd    `cmd:"" help:"Move durable consumers to a time, a sequence or another consumer's position (plan first, undoable)."`
	History  ConsumerHistoryCmd  `cmd:"" help:"List a consumer's recorded resets."`
	Recover  ConsumerRecoverCmd  `cmd:"" help:"Finish consumer changes left unfinished by an interrupted run."`
	Pause    ConsumerPauseCmd    `cmd:"" help:"Pause a consumer: it keeps its position and delivers nothing until resumed."`
	Resume   ConsumerResumeCmd   `cmd:"" help:"Resume a paused consumer."`
	Check    ConsumerCheckCmd    `cmd:"" help:"Check consumers against thresholds (Nagios and Prometheus output, exit 0-3)."`
	Snapshot ConsumerSnapshotCmd `cmd:"" help:"Save consumer positions under a name, compare with them, restore them, list and remove them."`
	Copy     ConsumerCopyCmd     `cmd:"" help:"Copy durable consumers to a mirror or sourced stream at the same place in the data (failover)."`
}

// Help is the long help of the consumer group.
func (ConsumerCmd) Help() string {
	return `Examples:
  jsctl consumer ls ORDERS                              # positions and lag of every consumer
  jsctl consumer reset ORDERS billing --to-time 10:00   # plan a rewind; add --execute to apply it
  jsctl consumer reset ORDERS billing --to-previous     # undo the last reset
  jsctl consumer snapshot save pre-deploy ORDERS --all
  jsctl consumer check ORDERS --all --lag-warn 1000     # health check (exit 0-3)`
}

// streamsFlag is --streams, which selects streams by name pattern for the
// commands that work across streams (consumer ls, reset, check, snapshot
// save).
type streamsFlag struct {
	Streams []string `name:"streams" placeholder:"GLOB" help:"Select streams whose names match GLOB ('*', '?', '[a-z]'; repeatable) instead of naming one; KV_, OBJ_ and JSCTL_ streams only when GLOB starts so."`
}

// selection builds the library selection from a stream argument, consumer
// arguments, --all and --streams.
func (f streamsFlag) selection(stream string, consumers []string, all bool) positions.Selection {
	return positions.Selection{Stream: stream, Streams: f.Streams, Consumers: consumers, All: all}
}

// positionsOptions are the library options from the global flags.
func positionsOptions(env *Env, acksBucket string) positions.Options {
	return positions.Options{Timeout: env.Globals.Timeout, Now: env.Now, AcksBucket: acksBucket}
}

// pauseFlags are --pause, --drain-timeout and --keep-paused (consumer reset
// and snapshot restore).
type pauseFlags struct {
	Pause        bool          `name:"pause" help:"Pause each consumer for its change instead of refusing a busy one (recommended over --force): wait for its deliveries to settle, change and verify it, then resume it."`
	DrainTimeout time.Duration `name:"drain-timeout" placeholder:"DURATION" help:"With --pause: wait at most DURATION for a paused consumer's unacknowledged deliveries, then refuse (or, with --force, go on) (default 30s)."`
	KeepPaused   bool          `name:"keep-paused" help:"With --pause: leave the consumers paused after the change (jsctl consumer resume ends the pause)."`
}

func (f pauseFlags) validate() error {
	if !f.Pause && (f.DrainTimeout != 0 || f.KeepPaused) {
		return jsutil.Errorf(jsutil.ErrBadInput, "--drain-timeout and --keep-paused go with --pause")
	}
	return nil
}

func (f pauseFlags) apply(o *reset.Options) {
	o.Pause, o.DrainTimeout, o.KeepPaused = f.Pause, f.DrainTimeout, f.KeepPaused
}

// maxPlanBytes bounds a plan or snapshot file read with --from-file: a
// plan for a thousand consumers is well under 1 MiB, and a file that never
// ends (/dev/zero, a pipe) must not be read until memory runs out.
const maxPlanBytes = 8 << 20

// readBounded reads a --from-file FILE of the given kind ("plan",
// "snapshot"), at most maxPlanBytes.
func readBounded(path, kind string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "read %s file %q: %w", kind, path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPlanBytes+1))
	if err != nil {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "read %s file %q: %w", kind, path, err)
	}
	if len(data) > maxPlanBytes {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "%s file %q is larger than %d MiB: it is not a %s written by --export", kind, path, maxPlanBytes>>20, kind)
	}
	return data, nil
}

// planRun shows and applies the plans of a plan-first consumer change
// (consumer reset, snapshot restore) over one or more streams.
type planRun struct {
	plans  []*reset.Plan
	target reset.Target
	// set prints the JSON as one reset.PlanSet (several streams may be
	// selected) rather than the one plan's document.
	set bool
	// title is the first line for people, without the streams, e.g.
	// "target sequence 5"; empty says what to print when there is no plan.
	title string
	// empty is printed when there are no plans at all.
	empty string
	opts  reset.Options
	// change holds --execute, --yes and --dry-run; export is --export.
	change changeFlags
	export string
	action string
	// audit is the audit trail's action (default audit.Reset).
	audit audit.Action
	// ran is set once execution started: plans not reached show "not run".
	ran bool
}

// run prints the plans, refuses, exports, asks or applies as askApply
// decides, and applies them stream by stream, stopping at the first
// failure; then it prints what was done.
func (r *planRun) run(ctx context.Context, env *Env, p *Printer, js jetstream.JetStream) error {
	var unfinished []reset.Unfinished
	n := 0
	for _, pl := range r.plans {
		unfinished = append(unfinished, pl.Unfinished...)
		warnSkipped(env, pl.SkippedRecords)
		n += len(pl.Changes)
	}
	warnUnfinished(env, p, unfinished)
	if err := reset.PlansErr(r.plans); err != nil {
		_ = r.print(p, "")
		return err
	}
	if r.export != "" {
		if err := r.write(r.export); err != nil {
			return err
		}
	}
	apply, err := askApply(ctx, env, p, applyRequest{
		changeFlags: r.change, Export: r.export, Changes: n, Action: r.action,
		Print:  func(note string) error { return r.print(p, note) },
		Resume: "jsctl consumer reset --from-file " + quoteArgs([]string{r.export}) + " --execute",
	})
	if err != nil || !apply {
		return err
	}
	var objects []auditObject
	for _, pl := range r.plans {
		for _, c := range pl.Changes {
			objects = append(objects, auditObject{c.Stream, c.Consumer})
		}
	}
	cl, err := env.Client(ctx)
	if err != nil {
		return err
	}
	action := r.audit
	if action == "" {
		action = audit.Reset
	}
	var ch *changeRun // nil: nothing to change, nothing to write
	if n > 0 {
		if ch, err = env.beginChange(ctx, cl, action, objects); err != nil {
			return err
		}
	}
	bar := env.Progress("changing consumers")
	r.ran = true
	done := 0
	var execErr error
	for _, pl := range r.plans {
		opts, offset := r.opts, done
		opts.Reason, opts.Ended = env.Globals.Reason, ch.resetEnded()
		opts.Progress = func(d, _ int) { bar.Set(offset+d, n) }
		if execErr = reset.Execute(ctx, js, pl, opts); execErr != nil {
			break
		}
		if opts.Unpin {
			reset.Unpin(ctx, js, pl, opts)
		}
		done += len(pl.Changes)
	}
	bar.Done()
	if err := r.print(p, ""); err != nil {
		return err
	}
	return ch.close(execErr)
}

// document is what --json prints and --export writes.
func (r *planRun) document() any {
	if r.set || len(r.plans) != 1 {
		return reset.Combine(r.target, r.plans)
	}
	return r.plans[0]
}

func (r *planRun) write(path string) error {
	b, err := json.MarshalIndent(r.document(), "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write plan to %q: %w", path, err)
	}
	return nil
}

// print prints the plans (or, once executed, what they did) followed by
// note, if any; with more than one stream the table has a STREAM column
// and each consumer is named STREAM/CONSUMER.
func (r *planRun) print(p *Printer, note string) error {
	if p.JSON {
		return p.PrintJSON(r.document())
	}
	var streams []string
	n := 0
	for _, pl := range r.plans {
		streams = append(streams, pl.Stream)
		n += len(pl.Changes)
	}
	switch {
	case len(r.plans) == 0:
		p.Printf("%s\n", r.empty)
		return nil
	case n == 0 && len(r.plans) == 1:
		p.Printf("No consumers on stream %s.\n", r.plans[0].Stream)
		return nil
	case n == 0:
		p.Printf("No consumers on streams %s.\n", strings.Join(streams, ", "))
		return nil
	}
	defer func() {
		if note != "" {
			p.Printf("%s\n", note)
		}
	}()
	multi := len(r.plans) > 1
	headers := []string{"CONSUMER", "METHOD", "DELIVERED", "ACK FLOOR", "TO", "TO TIME", "REDELIVER", "SKIP", "ACK RECORDS", "STATUS"}
	if multi {
		headers = append([]string{"STREAM"}, headers...)
	}
	var rows [][]string
	for _, pl := range r.plans {
		for _, c := range pl.Changes {
			acks := strconv.Itoa(c.AckRecordsInRange)
			if c.AckRecordsForgotten > 0 {
				acks += fmt.Sprintf(" (%d forgotten)", c.AckRecordsForgotten)
			}
			row := []string{c.Consumer, string(c.Method), u64(c.From.Delivered), u64(c.From.AckFloor), u64(c.To.Sequence), optTableTime(p, c.To.Time),
				countText(c.Redeliver), countText(c.Skip), acks, r.status(pl, c)}
			if multi {
				row = append([]string{pl.Stream}, row...)
			}
			rows = append(rows, row)
		}
	}
	label := "Stream " + Escape(streams[0])
	if multi {
		label = "Streams " + Escape(strings.Join(streams, ", "))
	}
	p.Fitf("%s, %s:\n", label, r.title)
	if err := p.Table(headers, rows, wideOnly("DELIVERED", "ACK RECORDS")); err != nil {
		return err
	}
	var skipped, owned []string
	for _, pl := range r.plans {
		for _, c := range pl.Changes {
			who := c.Consumer
			if multi {
				who = pl.Stream + "/" + c.Consumer
			}
			printChangeNotes(p, Escape(who), c)
		}
		for _, s := range pl.Skipped {
			if multi {
				s = pl.Stream + "/" + s
			}
			skipped = append(skipped, s)
		}
		for _, s := range pl.ServerOwned {
			if multi {
				s = pl.Stream + "/" + s
			}
			owned = append(owned, s)
		}
	}
	if len(skipped) > 0 {
		p.Printf("Skipped ephemeral consumers: %s\n", Escape(strings.Join(skipped, ", ")))
	}
	if len(owned) > 0 {
		p.Printf("Skipped consumers the server made for mirrors and sources: %s\n", Escape(strings.Join(owned, ", ")))
	}
	return nil
}

// printChangeNotes prints the lines under the table about one change: why
// its method, where a copied position comes from, its pause, warnings,
// refusal and failure.
func printChangeNotes(p *Printer, who string, c *reset.Change) {
	p.Fitf("  %s: %s\n", who, c.Reason)
	if s := c.Source; s != nil {
		p.Fitf("  %s: copies the %s of %s (delivered %d, ack floor %d, %s)\n", who, positionWords(s.Position), Escape(s.Consumer), s.Delivered, s.AckFloor, filterWords(s.Filters))
	}
	if ps := c.Pause; ps != nil {
		p.Fitf("  %s: pause: %s\n", who, pauseText(c, ps))
	}
	if pr := c.Priority; pr != nil {
		p.Fitf("  %s: priority: %s\n", who, priorityText(c, pr))
	}
	what := "saved configuration against the consumer's own (not applied)"
	if c.Method == reset.Create {
		what = "saved configuration against the server's defaults"
	}
	printConfigDiff(p, who, what, c.ConfigDiff)
	printChangeMessages(p, who, c)
	if c.AckRecordsForgotten > 0 { // the ACK RECORDS column says it with --wide
		verb := "forgets"
		if c.Applied {
			verb = "forgot"
		}
		p.Fitf("  %s: %s %s in the replayed range\n", who, verb, plural(c.AckRecordsForgotten, "ack record", "ack records"))
	}
	for _, w := range c.Warnings {
		p.Fitf("  %s: warning: %s\n", who, w)
	}
	if c.Refused != "" {
		p.Fitf("  %s: refused: %s\n", who, c.Refused)
	}
	if c.Error != "" {
		p.Fitf("  %s: failed: %s\n", who, c.Error)
	}
}

func positionWords(pos string) string {
	if pos == reset.PositionDelivered {
		return "delivered position"
	}
	return "ack floor"
}

func filterWords(f []string) string {
	if len(f) == 0 {
		return "all subjects"
	}
	return "filter " + strings.Join(f, ", ")
}

// pauseText says what a change does, or did, about pausing its consumer.
func pauseText(c *reset.Change, ps *reset.PauseStep) string {
	then := "then resume it"
	if !ps.Resume {
		then = fmt.Sprintf("then leave it paused (jsctl consumer resume %s %s --execute ends the pause)", c.Stream, c.Consumer)
	}
	switch {
	case ps.AlreadyPausedUntil != nil:
		return fmt.Sprintf("already paused until %s: changed while paused, and left paused", ps.AlreadyPausedUntil.UTC().Format(time.RFC3339))
	case ps.Paused:
		out := "paused; " + drainText(ps)
		switch {
		case ps.Resumed:
			out += "; resumed"
		case c.Applied && !ps.Resume:
			out += "; left paused"
		}
		return out
	}
	waits := fmt.Sprintf("wait up to %s for its deliveries to settle", time.Duration(ps.DrainTimeoutNS))
	if ps.AckPending > 0 {
		waits = fmt.Sprintf("wait up to %s for its %s", time.Duration(ps.DrainTimeoutNS), plural(ps.AckPending, "unacknowledged delivery", "unacknowledged deliveries"))
	}
	busy := ""
	if ps.Waiting > 0 && c.Method != reset.Recreate { // a recreate warns instead
		busy = fmt.Sprintf(" (%s waiting: served from the new position after the resume)", plural(ps.Waiting, "pull request", "pull requests"))
	}
	return fmt.Sprintf("pause it, %s, %s it and verify, %s%s", waits, c.Method, then, busy)
}

// status is a change's STATUS column.
func (r *planRun) status(pl *reset.Plan, c *reset.Change) string {
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
	case pl.Executed || r.ran:
		return "not run"
	}
	return "planned"
}

func u64(n uint64) string { return strconv.FormatUint(n, 10) }

// countText is a count that may be unknown (nil): "unknown".
func countText(n *uint64) string {
	if n == nil {
		return "unknown"
	}
	return u64(*n)
}
