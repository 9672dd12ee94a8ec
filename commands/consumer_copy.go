package commands

import (
	"context"
	"fmt"
	"strings"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/audit"
	"github.com/jsctl/jsctl/jsutil/failover"
	"github.com/jsctl/jsctl/jsutil/positions"
	"github.com/jsctl/jsctl/jsutil/replica"
	"github.com/jsctl/jsctl/jsutil/reset"
)

// ConsumerCopyCmd copies durable consumers to a replica of their stream at
// the same place in the data.
type ConsumerCopyCmd struct {
	Stream    string   `arg:"" predictor:"stream" help:"Origin stream (its consumers are only read; --pause-origin pauses them)."`
	Consumers []string `arg:"" optional:"" predictor:"consumer" help:"Consumers to copy (or --all)."`
	targetFlags
	All      bool   `name:"all" help:"Copy every durable consumer of the origin stream."`
	Position string `name:"position" enum:"ack-floor,delivered" default:"ack-floor" predictor:"enum" help:"Continue after the origin consumer's ack floor (the first message it had not finished) or its delivered position (${enum})."`
	AllowLag bool   `name:"allow-lag" help:"Copy even when the replica has not yet received the origin position (it starts at the replica's next message; the origin's messages before the position that arrive later are delivered again)."`
	allowInexactFlag
	PauseOrigin bool `name:"pause-origin" help:"With --execute: pause each origin consumer (until resumed) before reading its position, for a planned switchover; they stay paused (resumed again when nothing is copied)."`
	changeFlags
	Force bool `name:"force" help:"Move consumers that exist on the replica while clients read from them, and accept moves that skip messages for good."`
}

// Help is the long help of consumer copy.
func (ConsumerCopyCmd) Help() string {
	return `Copies durable consumers of an origin stream to a replica (--to-stream): a
mirror of it, or a stream that sources it, on the same server or on another
cluster or JetStream domain (--to-server, --to-context, --to-js-domain,
--to-creds open a second connection). Each consumer is created on the replica
with its configuration (or, if it exists there, moved) so that it delivers
first the replica's message that came from the first origin message the
consumer had not finished (its ack floor + 1; --position delivered: its
delivered + 1).

Sequences differ between an origin and a stream that sources it, so the
position is translated: exactly from the server's own records (a mirror keeps
the origin's sequences; a sourced message carries its origin sequence in the
Nats-Stream-Source header), else by time, labelled "by-time" in the plan and
in --json ("translation": {"method"}). The copy starts by sequence there
(deliver policy by_start_sequence); a pause and more replicas than the
replica stream has are not copied, and filters are mapped through the
source's subject transform (the plan says so). A filter the replica does not
receive is warned about.

Refused (exit 5) when the replica has not yet received the origin position
(replication lag), naming how many messages it is behind, unless --allow-lag;
and where the position cannot be translated exactly (by time, or where the
replica's copies there came from an earlier stream of the origin's name,
deleted and created again since: the Nats-Stream-Source identity, or a
mirror's message times, against the origin's creation time), naming why,
unless --allow-inexact (then a warning).
The origin's consumers are never changed; --pause-origin pauses them first
(for a planned switchover, so their position cannot move), and they stay
paused ("jsctl consumer resume" ends it).

It is a consumer change like consumer reset: without --execute it prints the
plan and changes nothing (with it, at a terminal it asks first unless --yes);
each change writes an intent record, is verified from the server's reply and
recorded in history, all in the replica's buckets; a killed run is finished on
the replica with "jsctl consumer recover TARGET --execute" (with the replica's
connection flags as global flags).

--json prints {"origin", "target", "position", "executed", "paused_origin",
"copies": [{"consumer", "origin_ack_floor", "origin_sequence", "translation":
{"target_sequence", "from_sequence", "method", "exact", "reason", "behind", "requests"},
"filter_subjects", "dropped"}], "changes": {the plan of consumer reset --json}}.

Examples:
  jsctl consumer copy ORDERS --all --to-stream ORDERS_DR                  # the plan
  jsctl consumer copy ORDERS billing --to-stream ORDERS_DR --execute
  jsctl consumer copy ORDERS --all --to-stream ORDERS_DR --to-context dr --execute
  jsctl consumer copy ORDERS --all --to-stream ORDERS --to-js-domain leaf --pause-origin --execute
  jsctl consumer copy ORDERS billing --to-stream ALL_ORDERS --position delivered --allow-lag`
}

// Validate checks the flag combinations.
func (c *ConsumerCopyCmd) Validate() error {
	if err := c.targetFlags.validate(); err != nil {
		return err
	}
	if c.All == (len(c.Consumers) > 0) {
		return jsutil.Errorf(jsutil.ErrBadInput, "name consumers to copy or pass --all (not both)")
	}
	if c.ToStream == c.Stream && !c.targetFlags.second() {
		return jsutil.Errorf(jsutil.ErrBadInput, "--to-stream %s is the origin stream itself: name its mirror or a stream that sources it (or, for a replica of the same name elsewhere, --to-server, --to-context or --to-js-domain)", c.ToStream)
	}
	return c.changeFlags.validate()
}

// Run plans the copy, prints it and (with --execute or a confirmation)
// applies it on the replica.
func (c *ConsumerCopyCmd) Run(ctx context.Context, env *Env) error {
	cl, p, err := env.Session(ctx)
	if err != nil {
		return err
	}
	tcl, where, closeTarget, err := c.connect(ctx, env, cl)
	if err != nil {
		return err
	}
	defer closeTarget()
	r := &copyRun{origin: c.Stream, target: c.ToStream, where: where, change: c.changeFlags}
	applying := c.Execute && !c.DryRun
	if c.PauseOrigin && applying {
		if r.paused, err = pauseOrigins(ctx, env, cl, c.Stream, c.Consumers, c.All); err != nil {
			return err
		}
	} else if c.PauseOrigin {
		r.wouldPause = true
	}
	opts := copyOptions(env, c.Position, c.AllowLag, c.Force)
	opts.AllowInexact = c.AllowInexact
	bar := env.Progress("planning")
	opts.Reset.Progress = bar.Set
	r.plan, err = failover.PlanCopy(ctx, replica.Side{JS: cl.JS, Stream: c.Stream}, c.Consumers, c.All, replica.Side{JS: tcl.JS, Stream: c.ToStream}, opts)
	bar.Done()
	opts.Reset.Progress = nil
	if err == nil {
		err = r.run(ctx, env, p, tcl, opts.Reset)
	}
	if err != nil && !r.copied() && len(r.paused) > 0 {
		resumeOrigins(ctx, env, cl, c.Stream, r.paused)
		r.paused = nil
	}
	return err
}

// copyOptions are the library options from the flags.
func copyOptions(env *Env, position string, allowLag, force bool) failover.Options {
	o := failover.Options{
		Position: position, AllowLag: allowLag,
		Reset:     reset.Options{Timeout: env.Globals.Timeout, Now: env.Now, Force: force},
		Positions: positionsOptions(env, ""),
	}
	env.waitOptions(&o.Reset)
	return o
}

// pauseOrigins pauses the selected consumers of the origin stream until
// resumed, and returns those it paused (not those paused already).
func pauseOrigins(ctx context.Context, env *Env, cl *jsutil.Client, stream string, consumers []string, all bool) ([]string, error) {
	sel := positions.Selection{Stream: stream, Consumers: consumers, All: all}
	targets, err := positions.Select(ctx, cl.JS, sel, positionsOptions(env, ""))
	if err != nil {
		return nil, err
	}
	var objects []auditObject
	for _, t := range targets {
		objects = append(objects, auditObject{t.Stream, t.Consumer})
	}
	// The pauses are changes of their own, on the origin's connection.
	ch, err := env.beginChange(ctx, cl, audit.Pause, objects)
	if err != nil {
		return nil, err
	}
	var paused []string
	for _, t := range targets {
		ci, err := cl.JS.Consumer(ctx, t.Stream, t.Consumer)
		if err != nil {
			resumeOrigins(ctx, env, cl, stream, paused)
			return nil, jsutil.Wrap(err, "pause consumer %q on %q", t.Consumer, t.Stream)
		}
		if ci.CachedInfo().Paused {
			continue
		}
		if _, err := positions.Pause(ctx, cl.JS, t.Stream, t.Consumer, positions.UntilResumed(), positionsOptions(env, "")); err != nil {
			resumeOrigins(ctx, env, cl, stream, paused)
			return nil, err
		}
		paused = append(paused, t.Consumer)
		ch.ended(ctx, auditEnd{auditObject: auditObject{t.Stream, t.Consumer}, Outcome: audit.Verified, Target: "until resumed (consumer copy --pause-origin)"})
	}
	return paused, ch.close(nil)
}

// resumeOrigins resumes the origin consumers a run paused when it copied
// nothing; a failure is a warning (the consumer stays paused).
func resumeOrigins(ctx context.Context, env *Env, cl *jsutil.Client, stream string, names []string) {
	var objects []auditObject
	for _, n := range names {
		objects = append(objects, auditObject{stream, n})
	}
	ch, err := env.beginChange(context.WithoutCancel(ctx), cl, audit.Resume, objects)
	if err != nil {
		ch = nil // the pauses are undone all the same: not resuming would be the worse change
	}
	for _, n := range names {
		if _, err := positions.Resume(context.WithoutCancel(ctx), cl.JS, stream, n, positionsOptions(env, "")); err != nil {
			fmt.Fprintf(env.Stderr, "jsctl: warning: consumer %q on %q stays paused: %v\n", n, stream, err)
			continue
		}
		ch.ended(ctx, auditEnd{auditObject: auditObject{stream, n}, Outcome: audit.Verified, Target: "resumed (consumer copy --pause-origin copied nothing)"})
	}
}

// copyRun shows and applies a copy (consumer copy, snapshot restore
// --to-stream).
type copyRun struct {
	plan           *failover.Plan
	origin, target string
	// where names the replica's connection ("" for the first).
	where  string
	change changeFlags
	// paused lists the origin consumers --pause-origin paused;
	// wouldPause says a dry run would pause them.
	paused     []string
	wouldPause bool
	ran        bool
}

// copied reports whether any change was applied.
func (r *copyRun) copied() bool {
	if r.plan == nil || r.plan.Changes == nil {
		return false
	}
	for _, c := range r.plan.Changes.Changes {
		if c.Applied {
			return true
		}
	}
	return false
}

func (r *copyRun) action() string {
	if r.plan != nil && r.plan.Snapshot != "" {
		return fmt.Sprintf("restore snapshot %q on %q", r.plan.Snapshot, r.target)
	}
	return fmt.Sprintf("copy consumers of %q to %q", r.origin, r.target)
}

// run prints the plan, refuses, asks or applies as askApply decides, then
// prints what was done.
func (r *copyRun) run(ctx context.Context, env *Env, p *Printer, tcl *jsutil.Client, opts reset.Options) error {
	pl := r.plan.Changes
	warnSkipped(env, pl.SkippedRecords)
	warnUnfinished(env, p, pl.Unfinished)
	if err := pl.Err(); err != nil {
		_ = r.print(p, "")
		return r.refusal(pl)
	}
	apply, err := askApply(ctx, env, p, applyRequest{
		changeFlags: r.change, Changes: len(pl.Changes), Action: r.action(),
		Print: func(note string) error { return r.print(p, note) },
	})
	if err != nil || !apply {
		return err
	}
	var objects []auditObject
	for _, c := range pl.Changes {
		objects = append(objects, auditObject{c.Stream, c.Consumer})
	}
	action := audit.Copy
	if r.plan.Snapshot != "" {
		action = audit.SnapshotRestore
	}
	// The events go on the target's connection: the change is made there.
	var ch *changeRun // nil: nothing to change, nothing to write
	if len(objects) > 0 {
		if ch, err = env.beginChange(ctx, tcl, action, objects); err != nil {
			return err
		}
	}
	bar := env.Progress("changing consumers")
	r.ran = true
	opts.Progress = bar.Set
	opts.Reason, opts.Ended = env.Globals.Reason, ch.resetEnded()
	execErr := reset.Execute(ctx, tcl.JS, pl, opts)
	bar.Done()
	if err := r.print(p, ""); err != nil {
		return err
	}
	return ch.close(execErr)
}

// refusal is the error of a plan with refused changes (jsutil.ErrConflict),
// worded as a copy.
func (r *copyRun) refusal(pl *reset.Plan) error {
	var first *reset.Change
	n := 0
	for _, c := range pl.Changes {
		if c.Refused != "" {
			if first == nil {
				first = c
			}
			n++
		}
	}
	if first == nil {
		return pl.Err()
	}
	what := fmt.Sprintf("copy consumer %q of %q to %q", first.Consumer, r.origin, r.target)
	if r.plan.Snapshot != "" {
		what = fmt.Sprintf("restore consumer %q of snapshot %q on %q", first.Consumer, r.plan.Snapshot, r.target)
	}
	if n > 1 {
		return jsutil.Errorf(jsutil.ErrConflict, "%s: %s (and %d more consumers refused)", what, first.Refused, n-1)
	}
	return jsutil.Errorf(jsutil.ErrConflict, "%s: %s", what, first.Refused)
}

// copyDocument is what --json prints.
type copyDocument struct {
	Origin       copyEnd          `json:"origin"`
	Target       copyEnd          `json:"target"`
	Position     string           `json:"position"`
	Snapshot     string           `json:"snapshot,omitempty"`
	Executed     bool             `json:"executed"`
	PausedOrigin []string         `json:"paused_origin"`
	Copies       []*failover.Copy `json:"copies"`
	Changes      *reset.Plan      `json:"changes"`
}

// copyEnd is a stream and, for a second connection, where it is.
type copyEnd struct {
	Stream     string `json:"stream"`
	Connection string `json:"connection,omitempty"`
}

func (r *copyRun) document() copyDocument {
	paused := r.paused
	if paused == nil {
		paused = []string{}
	}
	return copyDocument{
		Origin: copyEnd{Stream: r.origin}, Target: copyEnd{Stream: r.target, Connection: r.where},
		Position: r.plan.Position, Snapshot: r.plan.Snapshot, Executed: r.plan.Changes.Executed,
		PausedOrigin: paused, Copies: r.plan.Copies, Changes: r.plan.Changes,
	}
}

// print prints the copy (or, once executed, what it did) followed by note.
func (r *copyRun) print(p *Printer, note string) error {
	if p.JSON {
		return p.PrintJSON(r.document())
	}
	pl := r.plan.Changes
	if len(pl.Changes) == 0 {
		p.Printf("No durable consumers to copy from stream %s.\n", Escape(r.origin))
		return nil
	}
	where := ""
	if r.where != "" {
		where = " (" + r.where + ")"
	}
	what := "position " + r.plan.Position
	if r.plan.Snapshot != "" {
		what = "snapshot " + Escape(r.plan.Snapshot)
	}
	p.Fitf("Copy consumers of stream %s to stream %s%s, %s:\n", Escape(r.origin), Escape(r.target), Escape(where), what)
	headers := []string{"CONSUMER", "ORIGIN ACK FLOOR", "ORIGIN NEXT", "TRANSLATED", "TO", "TO TIME", "METHOD", "STATUS"}
	var rows [][]string
	for i, c := range pl.Changes {
		cp := r.plan.Copies[i]
		rows = append(rows, []string{c.Consumer, u64(cp.OriginAckFloor), u64(cp.OriginSeq), cp.Translation.Method,
			u64(c.To.Sequence), optTableTime(p, c.To.Time), string(c.Method), r.status(pl, c)})
	}
	if err := p.Table(headers, rows, wideOnly("ORIGIN NEXT", "TRANSLATED")); err != nil {
		return err
	}
	for i, c := range pl.Changes {
		cp := r.plan.Copies[i]
		who := Escape(c.Consumer)
		p.Fitf("  %s: %s\n", who, translationText(r.origin, r.target, cp))
		if c.Method == reset.Create {
			// Shown against the origin consumer's configuration.
			shown := *c
			shown.ConfigDiff = nil
			printChangeNotes(p, who, &shown)
			printConfigDiff(p, who, "configuration against the one on "+Escape(r.origin), c.ConfigDiff)
			continue
		}
		printChangeNotes(p, who, c)
	}
	switch {
	case len(r.paused) > 0:
		p.Printf("Paused on %s (they stay paused; jsctl consumer resume %s --execute ends it): %s\n", Escape(r.origin), Escape(quoteArgs(append([]string{r.origin}, r.paused...))), Escape(strings.Join(r.paused, ", ")))
	case r.wouldPause:
		p.Printf("With --execute, the consumers on %s are paused first (--pause-origin) and stay paused.\n", Escape(r.origin))
	}
	if note != "" {
		p.Printf("%s\n", note)
	}
	return nil
}

// translationText says how a copy's position was found.
func translationText(origin, target string, cp *failover.Copy) string {
	t := cp.Translation
	how := map[string]string{"mirror": "the mirror keeps the origin's sequences", "source": "from the Nats-Stream-Source header", "by-time": "by time, approximate"}[t.Method]
	if how == "" {
		how = t.Method
	}
	switch {
	case t.AfterLast && t.Behind == 0:
		return fmt.Sprintf("%s sequence %d is after its last message: the copy starts after %s's copy of it (%s)", Escape(origin), cp.OriginSeq, Escape(target), how)
	case t.Behind > 0 && t.TargetSeq == 0:
		return fmt.Sprintf("%s sequence %d is not on %s yet (%s behind)", Escape(origin), cp.OriginSeq, Escape(target), messages(t.Behind))
	case t.TargetSeq == 0 || t.FromSeq == 0 && t.Exact:
		return fmt.Sprintf("%s sequence %d: %s holds nothing from it or after it yet; the copy starts at its next message (%s)", Escape(origin), cp.OriginSeq, Escape(target), how)
	case !t.Exact:
		return fmt.Sprintf("%s sequence %d is found by time at %s sequence %d (approximate)", Escape(origin), cp.OriginSeq, Escape(target), t.TargetSeq)
	case t.FromSeq != cp.OriginSeq:
		return fmt.Sprintf("%s sequence %d is not on %s; the first after it, %d, is %s sequence %d (%s)", Escape(origin), cp.OriginSeq, Escape(target), t.FromSeq, Escape(target), t.TargetSeq, how)
	}
	return fmt.Sprintf("%s sequence %d is %s sequence %d (%s)", Escape(origin), cp.OriginSeq, Escape(target), t.TargetSeq, how)
}

func messages(n uint64) string { return plural(int(n), "message", "messages") }

// status is a change's STATUS column.
func (r *copyRun) status(pl *reset.Plan, c *reset.Change) string {
	pr := planRun{ran: r.ran}
	return pr.status(pl, c)
}
