package commands

import (
	"context"
	"fmt"

	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/jsctl/jsctl/jsutil/audit"
	"github.com/jsctl/jsctl/jsutil/reset"
)

// ConsumerRecoverCmd finishes consumer changes left unfinished by an
// interrupted run.
type ConsumerRecoverCmd struct {
	Stream    string   `arg:"" predictor:"stream" help:"Stream whose unfinished consumer changes to finish."`
	Consumers []string `arg:"" optional:"" predictor:"consumer" help:"Only these consumers (default: every consumer with an unfinished change)."`
	changeFlags
}

// Help is the long help of consumer recover.
func (ConsumerRecoverCmd) Help() string {
	return `Lists the consumer changes of a stream that an interrupted run left unfinished
(jsctl killed, the server restarted, a reply lost for good), what state each
consumer is in now, and what finishing the change does. With --execute it
finishes them: a deleted consumer is created again with its recorded
configuration at the planned target, a half-made change is completed, each
is verified, recorded in history (once) and its intent record removed.
Without --execute nothing changes; with it, at a terminal it asks first unless
--yes. Each change is claimed (compare-and-set
on its intent record) before it is finished, so of two runs started together
only one finishes it; the other leaves it alone with a warning.

Before anything is done, each change is checked against the consumer as it is
now: one the change did not find or make (deleted and created again by
someone else), or whose configuration was edited since the change recorded it,
is left as it is and reported (state other), for every method. The plan lists
the configuration finishing a change applies: a recreate's against the
consumer's own now, a create's (of a consumer that is missing) in full against
the server's defaults, with the fields that change where messages go or
whether they are acknowledged (deliver_subject, deliver_group, ack_policy,
filter subjects, max_deliver) marked (!) and warned about, and the ack records
it forgets. The intent record is data anyone allowed to write the bucket can
write: read what the plan shows before --execute. A record that does not
parse or holds impossible values (names, subjects, times, a configuration to
create that differs from the recorded one in more than the start, an interest
holder or ack records that are not the change's own) is reported by its key
and skipped; the others are still finished.

Every change jsctl makes to a consumer first writes an intent record (the
consumer's full configuration, its old position and the target) to the KV
bucket JSCTL_RESET_INTENTS, and removes it when the change is verified and
recorded. consumer ls, info and reset warn while one is left.

States: missing (the consumer does not exist), old (not changed yet, or put
back), new (made by the change, not yet at the target), at-target (made, not
yet recorded), recorded (only the intent record is left), other (changed by
someone else since: left as it is), no-stream (the stream is gone).

Examples:
  jsctl consumer recover ORDERS                      # what is unfinished, and the plan
  jsctl consumer recover ORDERS billing --execute    # finish billing's change
  jsctl consumer recover ORDERS --execute --json`
}

// Run lists, and with --execute finishes, the unfinished changes.
func (c *ConsumerRecoverCmd) Run(ctx context.Context, env *Env) error {
	cl, p, err := env.Session(ctx)
	if err != nil {
		return err
	}
	opts := reset.Options{Timeout: env.Globals.Timeout, Now: env.Now}
	env.waitOptions(&opts)
	r, err := reset.PlanRecover(ctx, cl.JS, c.Stream, c.Consumers, opts)
	if err != nil {
		return err
	}
	warnSkipped(env, r.SkippedRecords)
	if len(r.Changes) == 0 {
		if !p.JSON && bucketMissing(ctx, cl.JS, reset.IntentBucket) {
			p.Printf("%s", missingText("unfinished changes on stream "+Escape(r.Stream), reset.IntentBucket))
			return nil
		}
		return printRecovery(p, r, "")
	}
	apply, err := askApply(ctx, env, p, applyRequest{
		changeFlags: c.changeFlags, Changes: len(r.Changes),
		Action:   fmt.Sprintf("recover consumers on %q", r.Stream),
		Question: fmt.Sprintf("Finish %s?", plural(len(r.Changes), "unfinished change", "unfinished changes")),
		Print:    func(note string) error { return printRecovery(p, r, note) },
	})
	if err != nil || !apply {
		return err
	}
	var objects []auditObject
	for _, rc := range r.Changes {
		objects = append(objects, auditObject{r.Stream, rc.Consumer})
	}
	ch, err := env.beginChange(ctx, cl, audit.Recover, objects)
	if err != nil {
		return err
	}
	opts.Reason, opts.Ended = env.Globals.Reason, ch.resetEnded()
	execErr := reset.ExecuteRecover(ctx, cl.JS, r, opts)
	if err := printRecovery(p, r, ""); err != nil {
		return err
	}
	return ch.close(execErr)
}

// Validate checks the flags.
func (c *ConsumerRecoverCmd) Validate() error { return c.changeFlags.validate() }

// printRecovery prints what recover found (and, once executed, did),
// followed by note when it is not empty.
func printRecovery(p *Printer, r *reset.Recovery, note string) error {
	if p.JSON {
		return p.PrintJSON(r)
	}
	if len(r.Changes) == 0 {
		p.Printf("No unfinished changes on stream %s.\n", Escape(r.Stream))
		return nil
	}
	noun := "changes"
	if len(r.Changes) == 1 {
		noun = "change"
	}
	p.Printf("Stream %s: %d unfinished %s\n", Escape(r.Stream), len(r.Changes), noun)
	var rows [][]string
	for _, rc := range r.Changes {
		rows = append(rows, []string{
			rc.Consumer, rc.ChangeID, string(rc.Method), p.TableTime(rc.Started), rc.User + "@" + rc.Host,
			rc.State, rc.Action, u64(rc.To.Sequence), recoverStatus(r, rc),
		})
	}
	if err := p.Table([]string{"CONSUMER", "CHANGE", "METHOD", "STARTED", "BY", "STATE", "ACTION", "TO", "STATUS"}, rows, wideOnly("BY")); err != nil {
		return err
	}
	for _, rc := range r.Changes {
		who := Escape(rc.Consumer)
		p.Fitf("  %s: %s\n", who, rc.Reason)
		switch rc.Action {
		case reset.ActCreate:
			printConfigDiff(p, who, "recorded configuration it is created with, against the server's defaults", rc.ConfigDiff)
		case reset.ActRecreate:
			printConfigDiff(p, who, "recorded configuration it is recreated with, against its own now", rc.ConfigDiff)
		}
		if f := rc.Forget; f != nil && !rc.Done {
			p.Fitf("  %s: first forgets the ack records of sequences %d to %d in scope %s (bucket %s)\n", who, f.From, f.To, Escape(acks.ScopeDisplay(f.Scope)), Escape(f.Bucket))
		}
		for _, w := range rc.Warnings {
			p.Fitf("  %s: warning: %s\n", who, w)
		}
		if rc.Error != "" {
			p.Fitf("  %s: failed: %s\n", who, rc.Error)
		}
	}
	if note != "" {
		p.Printf("%s\n", note)
	}
	return nil
}

func recoverStatus(r *reset.Recovery, rc *reset.RecoverChange) string {
	switch {
	case rc.Error != "":
		return "failed"
	case rc.Done && rc.Verified:
		return "verified"
	case rc.Done:
		return "done"
	case rc.Applied:
		return "applied"
	case r.Executed:
		return "not run"
	}
	return "planned"
}

// warnUnfinished tells people, on stderr, about changes an interrupted run
// left unfinished and how to finish them (--json has them in a field).
func warnUnfinished(env *Env, p *Printer, list []reset.Unfinished) {
	if p.JSON {
		return
	}
	for _, u := range list {
		fmt.Fprintf(env.Stderr, "jsctl: warning: %s\n", u)
	}
}
