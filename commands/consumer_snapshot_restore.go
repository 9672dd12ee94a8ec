package commands

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/audit"
	"github.com/jsctl/jsctl/jsutil/failover"
	"github.com/jsctl/jsctl/jsutil/positions"
	"github.com/jsctl/jsctl/jsutil/replica"
	"github.com/jsctl/jsctl/jsutil/reset"
)

// ConsumerSnapshotRestoreCmd returns consumers to the positions a snapshot
// saved.
type ConsumerSnapshotRestoreCmd struct {
	Name      string   `arg:"" predictor:"snapshot" help:"Snapshot to restore (with --from-file: the name the file holds)."`
	Consumers []string `arg:"" optional:"" predictor:"snapshot-consumer" help:"Only these consumers of the snapshot: CONSUMER, or STREAM/CONSUMER for a name it holds on several streams (default: all)."`
	FromFile  string   `name:"from-file" type:"path" placeholder:"FILE" predictor:"file" help:"Restore the snapshot exported to FILE (snapshot save --export) instead of the stored one."`
	changeFlags
	Method     string `name:"method" enum:"auto,reset,recreate" default:"auto" predictor:"enum" help:"In place with the server's reset API, delete and recreate, or auto per consumer (${enum})."`
	Force      bool   `name:"force" help:"Move busy consumers while clients read from them (prefer --pause), and accept moves that skip messages for good."`
	ForgetAcks bool   `name:"forget-acks" help:"Forget the ack records (jsctl consume) of the replayed range so the handler runs again."`
	AcksBucket string `name:"bucket" default:"JSCTL_ACKS" placeholder:"NAME" help:"Ack-record bucket (jsctl consume's records)."`
	oldAcksBucketFlag
	Export string `name:"export" type:"path" placeholder:"FILE" predictor:"file" help:"Write the plan as JSON to FILE (apply it with jsctl consumer reset --from-file FILE --execute)."`
	ByTime bool   `name:"by-time" help:"Find each saved position by its saved time (the first message after the saved ack floor's time) instead of its sequence, as for a stream deleted and created again since the snapshot."`
	pauseFlags
	targetFlags
	allowInexactFlag
}

// Help is the long help of consumer snapshot restore.
func (ConsumerSnapshotRestoreCmd) Help() string {
	return `Returns the consumers of a snapshot (all, or those named) to where it saved
them: each one's next delivery becomes its saved ack floor + 1 (the RESTORE TO
column of snapshot save), and a consumer deleted since is created again from its
saved configuration (every field, as the server returned it). A saved position
the stream no longer holds is clamped to the stream's first message, with a
warning.

It is a consumer reset like any other, with the same plan, guards and output:
without --execute it prints the plan and changes nothing (with it, at a terminal it
asks first unless --yes);
each change writes an intent record first (a killed run is finished by jsctl
consumer recover), is verified from the server's reply and recorded in the
consumer's history (jsctl consumer reset STREAM CONSUMER --to-previous undoes
it). A consumer a client is reading from is refused unless --pause (pause it for
the change, then resume it) or --force. --forget-acks forgets the ack records of
the replayed range (jsctl consume) so the handler runs again.

--from-file FILE restores a snapshot written with "snapshot save --export FILE"
(NAME must be the name the file holds). A document naming a stream or consumer
no server can hold is refused (exit 2) before any request; a consumer it lists
twice is restored once, from its first entry. A consumer whose configuration differs
from the saved one keeps its configuration; only its position changes (the plan
warns and lists the fields). A consumer created from the snapshot has its saved
configuration listed against the server's defaults, and fields that change where
messages go or whether they are acknowledged (deliver_subject, deliver_group,
ack_policy, filter subjects, max_deliver) are warnings (--json: "config_diff").

A stream deleted and created again since the snapshot (its creation time differs
from the saved one) is refused (exit 5): its sequences name other messages now.
--by-time restores each position by its saved time instead: the next delivery is
the first message after the saved ack floor's time (the plan says "by time",
--json "by_time": true).

--to-stream TARGET restores onto a replica of the snapshot's stream (a mirror
or a stream that sources it, also on another cluster or domain with
--to-server, --to-context, --to-js-domain and --to-creds): each saved
position (ack floor + 1) is translated as jsctl consumer copy does, and the
output and --json are consumer copy's ("snapshot" names it). The snapshot
must hold one stream's consumers (name them as STREAM/CONSUMER otherwise).
The replica's copies are held against the origin the snapshot saw: an
origin deleted and created again since is refused (exit 5), and a position
that cannot be translated exactly is refused unless --allow-inexact.

--json prints {"streams", "target": {"kind": "saved", "snapshot"},
"executed", "changes": [...]} with the changes of consumer reset --json.

Examples:
  jsctl consumer snapshot restore pre-deploy                       # the plan
  jsctl consumer snapshot restore pre-deploy --execute
  jsctl consumer snapshot restore pre-deploy billing --pause --execute
  jsctl consumer snapshot restore pre-deploy --by-time             # a recreated stream
  jsctl consumer snapshot restore pre-deploy --from-file pre-deploy.json --forget-acks --execute
  jsctl consumer snapshot restore pre-deploy --to-stream ORDERS_DR --to-context dr --execute`
}

// Validate checks the name and the flag combinations.
func (c *ConsumerSnapshotRestoreCmd) Validate() error {
	if err := positions.CheckSnapshotName(c.Name); err != nil {
		return err
	}
	if err := c.pauseFlags.validate(); err != nil {
		return err
	}
	if err := c.changeFlags.validate(); err != nil {
		return err
	}
	if c.Export != "" && c.Execute {
		return jsutil.Errorf(jsutil.ErrBadInput, "--export writes a plan for review and never applies it: drop --execute, then apply the file with jsctl consumer reset --from-file FILE --execute")
	}
	if c.ToStream == "" {
		if c.targetFlags.second() {
			return jsutil.Errorf(jsutil.ErrBadInput, "--to-server, --to-context, --to-js-domain and --to-creds go with --to-stream TARGET")
		}
		if c.AllowInexact {
			return jsutil.Errorf(jsutil.ErrBadInput, "--allow-inexact goes with --to-stream TARGET")
		}
		return nil
	}
	if c.Export != "" || c.ByTime {
		return jsutil.Errorf(jsutil.ErrBadInput, "--to-stream cannot be used with --export or --by-time")
	}
	return c.targetFlags.validate()
}

// Run plans the restore, prints it and (with --execute or a confirmation)
// applies it.
func (c *ConsumerSnapshotRestoreCmd) Run(ctx context.Context, env *Env) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	var snap *positions.Snapshot
	if c.FromFile != "" {
		data, err := readBounded(c.FromFile, "snapshot")
		if err != nil {
			return err
		}
		if snap, err = positions.Decode(c.FromFile, data); err != nil {
			return err
		}
		if snap.Name != c.Name {
			return jsutil.Errorf(jsutil.ErrBadInput, "snapshot file %q holds snapshot %q, not %q: name the snapshot it holds", c.FromFile, snap.Name, c.Name)
		}
	}
	cl, err := env.Client(ctx)
	if err != nil && snap != nil && c.ToStream != "" && c.targetFlags.ToServer+c.targetFlags.ToContext != "" && errors.Is(err, jsutil.ErrConnection) {
		// Failing over from a lost origin: the snapshot file and the
		// replica's own records are enough for exact translations.
		fmt.Fprintf(env.Stderr, "jsctl: warning: the origin's server cannot be reached (%v): translating from the replica's records alone\n", err)
		cl, err = nil, nil
	}
	if err != nil {
		return err
	}
	if snap == nil {
		if snap, err = positions.Get(ctx, cl.JS, c.Name, positionsOptions(env, "")); err != nil {
			return err
		}
		warnNamedAs(env, []*positions.Snapshot{snap})
	}
	opts := reset.Options{
		Timeout: env.Globals.Timeout, Now: env.Now, Method: reset.Method(c.Method), Force: c.Force,
		ForgetAcks: c.ForgetAcks, AcksBucket: deprecatedFlag(env, "--acks-bucket", "--bucket", c.OldAcksBucket, c.AcksBucket), ByTime: c.ByTime,
	}
	c.pauseFlags.apply(&opts)
	env.waitOptions(&opts)
	if c.ToStream != "" {
		return c.restoreTo(ctx, env, p, cl, snap, opts)
	}
	bar := env.Progress("planning")
	opts.Progress = bar.Set
	plans, err := positions.PlanRestore(ctx, cl.JS, snap, c.Consumers, opts)
	bar.Done()
	if err != nil {
		return err
	}
	opts.Progress = nil
	r := &planRun{
		plans: plans, target: reset.Target{Kind: reset.ToSaved, Snapshot: snap.Name}, set: true, opts: opts,
		change: c.changeFlags, export: c.Export,
		title:  fmt.Sprintf("restore snapshot %s (taken %s by %s)", Escape(snap.Name), p.Time(snap.Created), snapshotWho(snap)),
		empty:  fmt.Sprintf("Snapshot %s holds no consumers.", Escape(snap.Name)),
		action: fmt.Sprintf("restore snapshot %q on %s", snap.Name, streamsText(plans)),
		audit:  audit.SnapshotRestore,
	}
	return r.run(ctx, env, p, cl.JS)
}

// restoreTo restores the snapshot onto the replica --to-stream, each saved
// position translated (jsutil/failover).
func (c *ConsumerSnapshotRestoreCmd) restoreTo(ctx context.Context, env *Env, p *Printer, cl *jsutil.Client, snap *positions.Snapshot, opts reset.Options) error {
	origin, err := snapshotOrigin(snap, c.Consumers)
	if err != nil {
		return err
	}
	tcl, where, closeTarget, err := c.connect(ctx, env, cl)
	if err != nil {
		return err
	}
	defer closeTarget()
	fo := failover.Options{Reset: opts, Positions: positionsOptions(env, ""), AllowInexact: c.AllowInexact}
	bar := env.Progress("planning")
	fo.Reset.Progress = bar.Set
	from := replica.Side{Stream: origin}
	if cl != nil {
		from.JS = cl.JS
	}
	plan, err := failover.PlanSnapshot(ctx, from, snap, c.Consumers, replica.Side{JS: tcl.JS, Stream: c.ToStream}, fo)
	bar.Done()
	if err != nil {
		return err
	}
	r := &copyRun{plan: plan, origin: origin, target: c.ToStream, where: where, change: c.changeFlags}
	return r.run(ctx, env, p, tcl, opts)
}

// snapshotOrigin is the one stream whose consumers a restore onto a
// replica takes from the snapshot: the snapshot's only stream, or that of
// the consumers named.
func snapshotOrigin(snap *positions.Snapshot, consumers []string) (string, error) {
	streams := snap.StreamNames()
	if len(streams) == 1 {
		return streams[0], nil
	}
	var picked []string
	for _, n := range consumers {
		s, _, ok := strings.Cut(n, "/")
		if !ok {
			return "", jsutil.Errorf(jsutil.ErrBadInput, "snapshot %q holds consumers of several streams (%s): name those of one as STREAM/CONSUMER to restore them on --to-stream", snap.Name, strings.Join(streams, ", "))
		}
		if !slices.Contains(picked, s) {
			picked = append(picked, s)
		}
	}
	if len(picked) != 1 {
		return "", jsutil.Errorf(jsutil.ErrBadInput, "snapshot %q holds consumers of several streams (%s): name consumers of one of them as STREAM/CONSUMER to restore them on --to-stream", snap.Name, strings.Join(streams, ", "))
	}
	return picked[0], nil
}
