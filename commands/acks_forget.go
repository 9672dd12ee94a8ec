package commands

import (
	"context"
	"fmt"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/acks"
)

// AcksForgetCmd deletes ack records so their messages run again.
type AcksForgetCmd struct {
	acksBucketFlag
	Scope string `name:"scope" required:"" placeholder:"NAME" predictor:"scope" help:"Scope of the records (e.g. ORDERS.billing)."`
	acksFilterFlags
	All bool `name:"all" help:"Forget every record of the scope (needed when no other filter is given)."`
	changeFlags
}

// Help is the long help of acks forget.
func (AcksForgetCmd) Help() string {
	return `Deletes the selected ack records (each with a compare-and-set on its revision) and
lowers the floors of the scope's consumers below the lowest forgotten sequence, so those messages run
again when they are redelivered (for instance after jsctl consumer reset). Without
--execute it only prints what it would delete; with it, at a terminal it asks
first unless --yes.

Forgetting a claim whose handler is still running makes that handler lose its lease:
it is stopped and its message is not marked done.

Examples:
  jsctl acks forget --scope ORDERS.billing --from-seq 100 --to-seq 200
  jsctl acks forget --scope ORDERS.billing --from-seq 100 --to-seq 200 --execute
  jsctl acks forget --scope ORDERS.billing --state failed --execute --json
  jsctl acks forget --scope ORDERS.billing --all --execute`
}

// Validate checks the flags.
func (c *AcksForgetCmd) Validate() error {
	if err := c.acksFilterFlags.validate(); err != nil {
		return err
	}
	if err := c.changeFlags.validate(); err != nil {
		return err
	}
	filtered := c.State != "" || c.FromSeq != 0 || c.ToSeq != 0 || c.Since != "" || c.Until != ""
	if !filtered && !c.All {
		return jsutil.Errorf(jsutil.ErrBadInput, "select records with --state, --from-seq, --to-seq, --since or --until, or pass --all")
	}
	return nil
}

// acksForgetJSON is forget's --json output.
type acksForgetJSON struct {
	Executed    bool             `json:"executed"`
	Bucket      string           `json:"bucket"`
	Scope       string           `json:"scope"`
	Selected    int              `json:"selected"`
	Forgotten   int              `json:"forgotten"`
	FloorBefore uint64           `json:"floor_before"`
	FloorAfter  uint64           `json:"floor_after"`
	Records     []acksRecordJSON `json:"records"`
}

// Run prints the plan or forgets.
func (c *AcksForgetCmd) Run(ctx context.Context, env *Env) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	scope := acks.ScopeName(c.Scope)
	f, err := c.filter(env, scope)
	if err != nil {
		return err
	}
	st, err := c.openScope(ctx, env, scope)
	if err != nil {
		return err
	}
	recs, err := st.List(ctx, f)
	if err != nil {
		return err
	}
	floor, err := st.ScopeFloor(ctx, scope)
	if err != nil {
		return err
	}
	out := acksForgetJSON{Bucket: c.Bucket, Scope: acks.ScopeDisplay(scope), Selected: len(recs),
		FloorBefore: floor, FloorAfter: floor, Records: acksRecordsOf(recs)}
	newFloor := floor
	for _, r := range recs {
		newFloor = min(newFloor, r.Seq-1)
	}
	out.FloorAfter = newFloor
	apply, err := askApply(ctx, env, p, applyRequest{
		changeFlags: c.changeFlags, Changes: len(recs),
		Action:   fmt.Sprintf("forget records of scope %q", out.Scope),
		Question: fmt.Sprintf("Forget %s?", plural(len(recs), "record", "records")),
		Print: func(note string) error {
			if p.JSON || len(recs) == 0 {
				return c.print(p, out, recs)
			}
			if err := acksTable(p, recs); err != nil {
				return err
			}
			p.Printf("\nPlan: forget %d records of scope %s (floor %d -> %d).\n", len(recs), out.Scope, floor, newFloor)
			if note != "" {
				p.Printf("%s\n", note)
			}
			return nil
		},
	})
	if err != nil || !apply {
		return err
	}
	out.Executed = true
	n, err := forgetWithProgress(ctx, env, st, recs, "forgetting records of scope "+out.Scope)
	out.Forgotten = n
	if err == nil && newFloor < floor {
		err = st.LowerFloors(ctx, scope, newFloor+1)
	}
	if err != nil {
		return fmt.Errorf("forgot %d of %d records of scope %q: %w", n, len(recs), out.Scope, err)
	}
	return c.print(p, out, recs)
}

// print prints what forget found and (once executed) did.
func (c *AcksForgetCmd) print(p *Printer, out acksForgetJSON, recs []acks.Record) error {
	if p.JSON {
		return p.PrintJSON(out)
	}
	if len(recs) == 0 {
		p.Printf("No ack records of scope %s match; nothing to forget.\n", out.Scope)
		return nil
	}
	if err := acksTable(p, recs); err != nil {
		return err
	}
	p.Printf("\nForgot %d records of scope %s (floor %d -> %d).\n", out.Forgotten, out.Scope, out.FloorBefore, out.FloorAfter)
	return nil
}
