package commands

import (
	"context"
	"errors"
	"fmt"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/audit"
	"github.com/jsctl/jsctl/jsutil/positions"
)

// ConsumerSnapshotRmCmd removes a snapshot.
type ConsumerSnapshotRmCmd struct {
	Name string `arg:"" predictor:"snapshot" help:"Snapshot to remove."`
	changeFlags
}

// Help is the long help of consumer snapshot rm.
func (ConsumerSnapshotRmCmd) Help() string {
	return `Removes a snapshot from the KV bucket JSCTL_SNAPSHOTS. Consumers are not touched.
An unknown name is exit code 3. Without --execute it prints the plan (the
snapshot: when and by whom it was saved, how many consumers) and changes
nothing, terminal or not; with --execute at a terminal it asks first unless
--yes, and without a terminal it applies (as consumer reset). It removes the
snapshot it showed: one saved again under the name since is left alone (exit 5).
The old immediate form, --yes without --execute, still applies, with a note on
stderr; it will be removed.

--json prints the plan, {"executed":false,"snapshot":{"name","created","user",
"host","consumers"}}, and once applied {"executed":true,"removed":"NAME"}.

Examples:
  jsctl consumer snapshot rm pre-deploy              # the plan
  jsctl consumer snapshot rm pre-deploy --execute`
}

// Validate checks the contract's flags.
func (c *ConsumerSnapshotRmCmd) Validate() error {
	return c.changeFlags.validateList()
}

// Run plans the removal and, as the contract decides, applies it.
func (c *ConsumerSnapshotRmCmd) Run(ctx context.Context, env *Env) error {
	cl, p, err := env.Session(ctx)
	if err != nil {
		return err
	}
	opts := positionsOptions(env, "")
	snap, err := positions.Get(ctx, cl.JS, c.Name, opts)
	// A document that does not read (or holds values no snapshot may) is
	// removed all the same, by name: this is the way to. The plan says so.
	unreadable := errors.Is(err, jsutil.ErrBadInput)
	if unreadable {
		fmt.Fprintf(env.Stderr, "jsctl: warning: %s: it is removed by name\n", Escape(err.Error()))
		snap, err = &positions.Snapshot{Name: c.Name}, nil
	}
	if err != nil {
		return err
	}
	warnNamedAs(env, []*positions.Snapshot{snap})
	l := &listChange{
		command: "consumer snapshot rm", action: fmt.Sprintf("remove snapshot %q", c.Name),
		title:   "Remove 1 snapshot from bucket " + positions.Bucket + " (consumers are not touched):",
		headers: []string{"SNAPSHOT", "SAVED", "BY", "CONSUMERS"},
		rows:    [][]string{rmRow(p, snap, unreadable)},
		changes: 1,
		plan: func() any {
			return map[string]any{"executed": false, "snapshot": map[string]any{
				"name": snap.Name, "created": snap.Created, "user": snap.User, "host": snap.Host, "consumers": snap.Consumers()}}
		},
		apply: func() error {
			// The snapshot's consumers are the events' objects.
			var objects []auditObject
			for _, st := range snap.Streams {
				for _, cs := range st.Consumers {
					objects = append(objects, auditObject{st.Name, cs.Name})
				}
			}
			ch, err := env.beginChange(ctx, cl, audit.SnapshotRm, objects)
			if err != nil {
				return err
			}
			remove := func() error { return positions.RemoveRead(ctx, cl.JS, snap, opts) }
			if unreadable {
				remove = func() error { return positions.Remove(ctx, cl.JS, c.Name, opts) }
			}
			if err := remove(); err != nil {
				return ch.close(err)
			}
			auditSnapshot(ctx, ch, snap)
			if p.JSON {
				return ch.close(p.PrintJSON(map[string]any{"executed": true, "removed": snap.Name}))
			}
			p.Printf("Removed snapshot %s.\n", Escape(snap.Name))
			return ch.close(nil)
		},
	}
	return l.run(ctx, env, p, c.changeFlags)
}

// rmRow is the plan's row of snap; of a document that does not read only
// its name is known.
func rmRow(p *Printer, snap *positions.Snapshot, unreadable bool) []string {
	if unreadable {
		return []string{snap.Name, "unknown", "unknown", "unknown (the document does not read)"}
	}
	return []string{snap.Name, p.TableTime(snap.Created), snapshotWho(snap), fmt.Sprint(snap.Consumers())}
}
