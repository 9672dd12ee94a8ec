package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/audit"
	"github.com/jsctl/jsctl/jsutil/positions"
)

// ConsumerSnapshotSaveCmd saves consumers' positions under a name.
type ConsumerSnapshotSaveCmd struct {
	Name      string   `arg:"" predictor:"none" help:"Name of the new snapshot (letters, digits, - and _, parts joined by dots)."`
	Stream    string   `arg:"" optional:"" predictor:"stream" help:"Stream of the consumers (or --streams)."`
	Consumers []string `arg:"" optional:"" predictor:"consumer" help:"Consumers to save (or --all)."`
	All       bool     `name:"all" help:"Save every durable consumer of each selected stream."`
	streamsFlag
	Description string `name:"description" placeholder:"TEXT" help:"What the snapshot is for (shown by snapshot ls and show)."`
	Export      string `name:"export" placeholder:"FILE" predictor:"file" help:"Also write the snapshot document as JSON to FILE."`
	AcksBucket  string `name:"bucket" default:"JSCTL_ACKS" placeholder:"NAME" help:"Ack-record bucket whose scopes (STREAM.CONSUMER) are saved too."`
	oldAcksBucketFlag
}

// Help is the long help of consumer snapshot save.
func (ConsumerSnapshotSaveCmd) Help() string {
	return `Saves, under NAME in the KV bucket JSCTL_SNAPSHOTS, each consumer's full
configuration as the server returned it, its delivered and ack-floor positions
(sequence and time), its pending and ack-pending counts and the floor and record
counts of its ack-record scope, with the streams' first and last sequence and time,
the time, the user and the host. A name that exists already is refused (exit 5).

Take one before deploying new consumer code; "jsctl consumer snapshot show NAME"
then tells how far each consumer moved and whether its configuration changed, and
"jsctl consumer snapshot restore NAME --execute" returns each consumer to its saved
ack floor + 1 (a deleted one recreated from its saved configuration).

--json prints the snapshot document; --export FILE writes the same to FILE.

Examples:
  jsctl consumer snapshot save pre-deploy ORDERS --all --description "before v2.4"
  jsctl consumer snapshot save billing-1 ORDERS billing audit --export billing-1.json
  jsctl consumer snapshot save nightly --streams 'ORD*' --streams PAYMENTS --all`
}

// Validate checks the name and the selection.
func (c *ConsumerSnapshotSaveCmd) Validate() error {
	if err := positions.CheckSnapshotName(c.Name); err != nil {
		return err
	}
	return c.selection(c.Stream, c.Consumers, c.All).Validate()
}

// Run saves the snapshot.
func (c *ConsumerSnapshotSaveCmd) Run(ctx context.Context, env *Env) error {
	cl, p, err := env.Session(ctx)
	if err != nil {
		return err
	}
	sel := c.selection(c.Stream, c.Consumers, c.All)
	targets, err := positions.Select(ctx, cl.JS, sel, positionsOptions(env, ""))
	if err != nil {
		return err
	}
	var objects []auditObject
	for _, t := range targets {
		objects = append(objects, auditObject{t.Stream, t.Consumer})
	}
	ch, err := env.beginChange(ctx, cl, audit.SnapshotSave, objects)
	if err != nil {
		return err
	}
	snap, err := positions.Save(ctx, cl.JS, c.Name, c.Description, sel, positionsOptions(env, deprecatedFlag(env, "--acks-bucket", "--bucket", c.OldAcksBucket, c.AcksBucket)))
	if err != nil {
		return err
	}
	auditSnapshot(ctx, ch, snap)
	return ch.close(c.print(env, p, snap))
}

// auditSnapshot writes the events of a snapshot saved or removed: one per
// consumer it holds (their positions are not changed).
func auditSnapshot(ctx context.Context, ch *changeRun, snap *positions.Snapshot) {
	for _, st := range snap.Streams {
		for _, cs := range st.Consumers {
			ch.ended(ctx, auditEnd{
				auditObject: auditObject{st.Name, cs.Name}, Outcome: audit.Verified, Same: true,
				Target: "snapshot " + snap.Name, Detail: map[string]any{"snapshot": snap.Name},
			})
		}
	}
}

// print says what was saved.
func (c *ConsumerSnapshotSaveCmd) print(env *Env, p *Printer, snap *positions.Snapshot) error {
	for _, w := range snap.Warnings {
		fmt.Fprintf(env.Stderr, "jsctl: warning: %s\n", TermSafe(w))
	}
	if c.Export != "" {
		if err := writeSnapshot(c.Export, snap); err != nil {
			return err
		}
	}
	if p.JSON {
		return p.PrintJSON(snap)
	}
	n := snap.Consumers()
	noun := "consumers"
	if n == 1 {
		noun = "consumer"
	}
	p.Printf("Saved snapshot %s: %d %s on %s.\n", snap.Name, n, noun, Escape(strings.Join(snap.StreamNames(), ", ")))
	headers, rows := snapshotConsumerRows(p, snap)
	if err := p.Table(headers, rows, wideOnly("DELIVERED", "ACK FLOOR TIME", "PENDING")); err != nil {
		return err
	}
	if c.Export != "" {
		p.Printf("Written to %s.\n", c.Export)
	}
	return nil
}

func writeSnapshot(path string, snap *positions.Snapshot) error {
	b, err := json.MarshalIndent(snap, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return jsutil.Errorf(jsutil.ErrBadInput, "snapshot %q was saved, but writing it to %q failed: %w", snap.Name, path, err)
	}
	return nil
}
