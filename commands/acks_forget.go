package commands

import (
	"context"
	"fmt"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/jsctl/jsctl/jsutil/audit"
)

// AcksForgetCmd deletes ack records so their messages run again.
type AcksForgetCmd struct {
	acksBucketFlag
	Scope string `name:"scope" required:"" placeholder:"NAME" predictor:"scope" help:"Scope of the records (e.g. ORDERS.billing)."`
	acksFilterFlags
	All     bool `name:"all" help:"Forget every record of the scope (needed when no other filter is given)."`
	Corrupt bool `name:"corrupt" help:"Forget the records of the scope that do not read (with --from-seq/--to-seq: those whose sequence key is in the range)."`
	changeFlags
}

// Help is the long help of acks forget.
func (AcksForgetCmd) Help() string {
	return `Deletes the selected ack records (each with a compare-and-set on its revision) and
lowers the floors of the scope's consumers below the start of the range (--from-seq;
sequence 1 with --to-seq alone or --all), whether or not records in the range are still
there (records expire after their retention, floors do not), so those messages run again
when they are redelivered (for instance after jsctl consumer reset). Selected by --state,
--since or --until alone, the floors are lowered below the lowest forgotten sequence.
Without --execute it only prints what it would do; with it, at a terminal it asks
first unless --yes.

Forgetting a claim whose handler is still running makes that handler lose its lease:
it is stopped and its message is not marked done.

Examples:
  jsctl acks forget --scope ORDERS.billing --from-seq 100 --to-seq 200
  jsctl acks forget --scope ORDERS.billing --from-seq 100 --to-seq 200 --execute
  jsctl acks forget --scope ORDERS.billing --state failed --execute --json
  jsctl acks forget --scope ORDERS.billing --all --execute
  jsctl acks forget --scope ORDERS.billing --corrupt --execute

A record that does not read is reported by key and skipped by every command; --corrupt
selects exactly those records, so that they can be removed.`
}

// Validate checks the flags.
func (c *AcksForgetCmd) Validate() error {
	if err := c.acksFilterFlags.validate(); err != nil {
		return err
	}
	if err := c.changeFlags.validate(); err != nil {
		return err
	}
	if c.Corrupt && (c.State != "" || c.Since != "" || c.Until != "" || c.All) {
		return jsutil.Errorf(jsutil.ErrBadInput, "--corrupt selects by --from-seq and --to-seq only (an unreadable record has no state or time of its own)")
	}
	filtered := c.State != "" || c.FromSeq != 0 || c.ToSeq != 0 || c.Since != "" || c.Until != "" || c.Corrupt
	if !filtered && !c.All {
		return jsutil.Errorf(jsutil.ErrBadInput, "select records with --state, --from-seq, --to-seq, --since or --until, or pass --all")
	}
	return nil
}

// acksForgetJSON is forget's --json output.
type acksForgetJSON struct {
	Executed  bool   `json:"executed"`
	Bucket    string `json:"bucket"`
	Scope     string `json:"scope"`
	Selected  int    `json:"selected"`
	Forgotten int    `json:"forgotten"`
	// LowerFrom is the first sequence taken out of the floors (0: none).
	LowerFrom   uint64           `json:"lower_from"`
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
	f.Corrupt = c.Corrupt
	f.SkipCorrupt = func(err error) { reportCorrupt(env, err) }
	recs, err := st.List(ctx, f)
	if err != nil {
		return err
	}
	reportStale(env, recs)
	floor, err := st.ScopeFloor(ctx, scope)
	if err != nil {
		return err
	}
	from := c.lowerFrom(recs)
	out := acksForgetJSON{Bucket: c.Bucket, Scope: acks.ScopeDisplay(scope), Selected: len(recs),
		LowerFrom: from, FloorBefore: floor, FloorAfter: floor, Records: acksRecordsOf(recs)}
	newFloor := floor
	if from > 0 {
		newFloor = min(floor, from-1)
	}
	out.FloorAfter = newFloor
	changes := len(recs)
	if newFloor < floor {
		changes++ // lowering the floor is a change even when no record is left
	}
	apply, err := askApply(ctx, env, p, applyRequest{
		changeFlags: c.changeFlags, Changes: changes,
		Action:   fmt.Sprintf("forget records of scope %q", out.Scope),
		Question: fmt.Sprintf("Forget %s and lower the floor %d -> %d?", plural(len(recs), "record", "records"), floor, newFloor),
		Print: func(note string) error {
			if p.JSON {
				return p.PrintJSON(out)
			}
			switch {
			case len(recs) == 0 && newFloor == floor:
				p.Printf("No ack records of scope %s match; nothing to forget (floor %d).\n", out.Scope, floor)
				return nil
			case len(recs) == 0:
				p.Printf("Plan: no ack records of scope %s are present in the range (they expired, or were never written); lower the floor %d -> %d.\n", out.Scope, floor, newFloor)
			default:
				if err := acksTable(p, recs); err != nil {
					return err
				}
				p.Printf("\nPlan: forget %d records of scope %s (floor %d -> %d).\n", len(recs), out.Scope, floor, newFloor)
			}
			if note != "" {
				p.Printf("%s\n", note)
			}
			return nil
		},
	})
	if err != nil || !apply {
		return err
	}
	ch, err := env.acksChange(ctx, audit.AcksForget, scope)
	if err != nil {
		return err
	}
	out.Executed = true
	n, err := forgetWithProgress(ctx, env, st, recs, "forgetting records of scope "+out.Scope)
	out.Forgotten = n
	if err == nil && from > 0 {
		// Every floor, not only the lowest: each consumer's own floor may
		// reach into the range.
		err = st.LowerFloors(ctx, scope, from)
	}
	end := acksEnd(c.Bucket, scope, err, map[string]any{"selected": len(recs), "forgotten": n, "floor_before": floor, "floor_after": newFloor})
	end.Target = fmt.Sprintf("%d ack records", len(recs))
	ch.ended(ctx, end)
	if err != nil {
		return fmt.Errorf("forgot %d of %d records of scope %q: %w", n, len(recs), out.Scope, err)
	}
	return ch.close(c.print(p, out, recs))
}

// print prints what forget did.
func (c *AcksForgetCmd) print(p *Printer, out acksForgetJSON, recs []acks.Record) error {
	if p.JSON {
		return p.PrintJSON(out)
	}
	switch {
	case len(recs) == 0 && out.FloorAfter == out.FloorBefore:
		p.Printf("No ack records of scope %s match; nothing to forget (floor %d).\n", out.Scope, out.FloorBefore)
		return nil
	case len(recs) == 0:
		p.Printf("No ack records of scope %s were present in the range; lowered the floor %d -> %d.\n", out.Scope, out.FloorBefore, out.FloorAfter)
		return nil
	}
	if err := acksTable(p, recs); err != nil {
		return err
	}
	p.Printf("\nForgot %d of the %d records present of scope %s (floor %d -> %d).\n", out.Forgotten, len(recs), out.Scope, out.FloorBefore, out.FloorAfter)
	return nil
}

// lowerFrom is the first sequence the floors give up: the start of the
// sequence range (--from-seq; 1 with --to-seq alone or --all), whether or
// not its records still exist, or else the lowest selected record's (0:
// none, nothing selected).
func (c *AcksForgetCmd) lowerFrom(recs []acks.Record) uint64 {
	if c.Corrupt {
		return 0 // an unreadable record proved nothing: the floors stay
	}
	var from uint64
	switch {
	case c.FromSeq != 0:
		from = c.FromSeq
	case c.ToSeq != 0 || (c.All && c.State == "" && c.Since == "" && c.Until == ""):
		from = 1
	}
	for _, r := range recs {
		if from == 0 || r.Seq < from {
			from = max(r.Seq, 1)
		}
	}
	return from
}
