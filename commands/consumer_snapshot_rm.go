package commands

import (
	"context"
	"fmt"

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
	if err := positions.Remove(ctx, cl.JS, c.Name, positionsOptions(env, "")); err != nil {
		return err
	}
	if p.JSON {
		return p.PrintJSON(map[string]string{"removed": c.Name})
	}
	p.Printf("Removed snapshot %s.\n", c.Name)
	return nil
}
