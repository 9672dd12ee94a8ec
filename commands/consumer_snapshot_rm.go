package commands

import (
	"context"
	"fmt"

	"github.com/jsctl/jsctl/jsutil/audit"
	"github.com/jsctl/jsctl/jsutil/positions"
)

// ConsumerSnapshotRmCmd removes a snapshot.
type ConsumerSnapshotRmCmd struct {
	Name string `arg:"" predictor:"snapshot" help:"Snapshot to remove."`
	oneChangeFlags
}

// Help is the long help of consumer snapshot rm.
func (ConsumerSnapshotRmCmd) Help() string {
	return `Removes a snapshot from the KV bucket JSCTL_SNAPSHOTS. Consumers are not touched.
An unknown name is exit code 3. At a terminal it asks first unless --yes;
--dry-run only says what it would do.

--json prints {"removed":"NAME"}.

Examples:
  jsctl consumer snapshot rm pre-deploy`
}

// Run removes the snapshot.
func (c *ConsumerSnapshotRmCmd) Run(ctx context.Context, env *Env) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	what := "remove snapshot " + Escape(c.Name)
	if ok, err := askOne(ctx, env, p, c.oneChangeFlags, what, fmt.Sprintf("remove snapshot %q", c.Name)); err != nil || !ok {
		return err
	}
	cl, err := env.Client(ctx)
	if err != nil {
		return err
	}
	// The snapshot's consumers are the events' objects (a document that
	// cannot be read still goes: its events then name none).
	snap, _ := positions.Get(ctx, cl.JS, c.Name, positionsOptions(env, ""))
	if snap == nil {
		snap = &positions.Snapshot{Name: c.Name}
	}
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
	if err := positions.Remove(ctx, cl.JS, c.Name, positionsOptions(env, "")); err != nil {
		return err
	}
	auditSnapshot(ctx, ch, snap)
	if p.JSON {
		return ch.close(p.PrintJSON(map[string]string{"removed": c.Name}))
	}
	p.Printf("Removed snapshot %s.\n", c.Name)
	return ch.close(nil)
}
