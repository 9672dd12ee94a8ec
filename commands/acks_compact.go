package commands

import (
	"context"
	"fmt"

	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/jsctl/jsctl/jsutil/audit"
)

// AcksCompactCmd deletes done records at or below each scope's floor.
type AcksCompactCmd struct {
	acksBucketFlag
	Scope string `name:"scope" placeholder:"NAME" predictor:"scope" help:"Only this scope; default every scope in the bucket."`
	changeFlags
}

// Help is the long help of acks compact.
func (AcksCompactCmd) Help() string {
	return `Deletes the done records that every floor of their scope covers. A floor is what
jsctl consume records for each consumer of a scope: the messages it proved handled
(from the consumer's ack floor). A redelivered message its consumer's floor covers
counts as done without its record, so these records are no longer needed. Claims
and failed records are kept. What covers nothing is said on standard error: a corrupt
floor, a floor range or a sequence-keyed record of an earlier stream of the name
(deleted and created again since: it proves nothing about this stream's messages, and
is kept; acks forget removes such records).

Without --execute it prints how many records of each scope it would delete and
changes nothing; with --execute at a terminal it asks first (--yes skips the
question). At a terminal a progress bar shows the deletions.

Examples:
  jsctl acks compact
  jsctl acks compact --scope ORDERS.billing --execute
  jsctl acks compact --execute --yes --json`
}

// acksCompactJSON is one scope in compact's --json output.
type acksCompactJSON struct {
	Scope       string `json:"scope"`
	Floor       uint64 `json:"floor"`
	Compactable int    `json:"compactable"`
	Deleted     int    `json:"deleted"`
}

// acksCompactDoc is compact's --json output.
type acksCompactDoc struct {
	Executed bool              `json:"executed"`
	Bucket   string            `json:"bucket"`
	Scopes   []acksCompactJSON `json:"scopes"`
}

// Validate checks the flags.
func (c *AcksCompactCmd) Validate() error { return c.changeFlags.validate() }

// Run plans, and with --execute, compacts.
func (c *AcksCompactCmd) Run(ctx context.Context, env *Env) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	st, err := c.open(ctx, env)
	if err != nil {
		return err
	}
	var scopes []string
	if c.Scope != "" {
		sc := acks.ScopeName(c.Scope)
		if err := st.KnownScope(ctx, sc); err != nil {
			return err
		}
		scopes = []string{sc}
	} else if scopes, err = st.Scopes(ctx); err != nil {
		return err
	}
	doc := acksCompactDoc{Bucket: c.Bucket, Scopes: make([]acksCompactJSON, 0, len(scopes))}
	recs := make([][]acks.Record, len(scopes))
	total := 0
	for i, sc := range scopes {
		plan, err := st.PlanCompact(ctx, sc, func(err error) { reportCorrupt(env, err) })
		if err != nil {
			return err
		}
		// What the floors hold of an earlier stream of the name (or
		// cannot hold) covers nothing: said, never silently dropped.
		reportIgnored(env, acks.ScopeDisplay(sc), plan.Floors, plan.StaleRecords, "nothing is compacted by it", "kept; acks forget removes them")
		recs[i] = plan.Records
		total += len(recs[i])
		doc.Scopes = append(doc.Scopes, acksCompactJSON{Scope: acks.ScopeDisplay(sc), Floor: plan.Floor, Compactable: len(recs[i])})
	}
	apply, err := askApply(ctx, env, p, applyRequest{
		changeFlags: c.changeFlags, Changes: total,
		Action:   fmt.Sprintf("compact bucket %s", c.Bucket),
		Question: fmt.Sprintf("Delete %s?", plural(total, "done record", "done records")),
		Print:    func(note string) error { return c.print(p, doc, note) },
	})
	if err != nil || !apply {
		return err
	}
	ch, err := env.acksChange(ctx, audit.AcksCompact, scopes...)
	if err != nil {
		return err
	}
	doc.Executed = true
	for i, sc := range scopes {
		if len(recs[i]) == 0 {
			continue // nothing changed in this scope
		}
		n, err := forgetWithProgress(ctx, env, st, recs[i], "compacting scope "+acks.ScopeDisplay(sc))
		doc.Scopes[i].Deleted = n
		end := acksEnd(c.Bucket, sc, err, map[string]any{"compactable": len(recs[i]), "deleted": n, "floor": doc.Scopes[i].Floor})
		end.Target = fmt.Sprintf("%d done records at or below floor %d", len(recs[i]), doc.Scopes[i].Floor)
		ch.ended(ctx, end)
		if err != nil {
			return fmt.Errorf("compact scope %q: %w", acks.ScopeDisplay(sc), err)
		}
	}
	return ch.close(c.print(p, doc, ""))
}

// print prints the plan (or, once executed, what was deleted) and note.
func (c *AcksCompactCmd) print(p *Printer, doc acksCompactDoc, note string) error {
	if p.JSON {
		return p.PrintJSON(doc)
	}
	if len(doc.Scopes) == 0 {
		p.Printf("No ack records in bucket %s.\n", c.Bucket)
		return nil
	}
	for _, o := range doc.Scopes {
		if doc.Executed {
			p.Printf("scope %s: deleted %d done records at or below floor %d\n", o.Scope, o.Deleted, o.Floor)
		} else {
			p.Printf("scope %s: %d done records at or below floor %d can be deleted\n", o.Scope, o.Compactable, o.Floor)
		}
	}
	if note != "" {
		p.Printf("%s\n", note)
	}
	return nil
}
