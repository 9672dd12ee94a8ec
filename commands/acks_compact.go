package commands

import (
	"context"
	"fmt"

	"github.com/jsctl/jsctl/jsutil/acks"
)

// AcksCompactCmd deletes done records at or below each scope's floor.
type AcksCompactCmd struct {
	acksBucketFlag
	Scope string `name:"scope" placeholder:"NAME" predictor:"scope" help:"Only this scope; default every scope in the bucket."`
}

// Help is the long help of acks compact.
func (AcksCompactCmd) Help() string {
	return `Deletes the done records that every floor of their scope covers. A floor is what
jsctl consume records for each consumer of a scope: the messages it proved handled
(from the consumer's ack floor). A redelivered message its consumer's floor covers
counts as done without its record, so these records are no longer needed. Claims
and failed records are kept. At a terminal a progress bar shows the deletions.

Examples:
  jsctl acks compact
  jsctl acks compact --scope ORDERS.billing --json`
}

// acksCompactJSON is one scope in compact's --json output.
type acksCompactJSON struct {
	Scope   string `json:"scope"`
	Floor   uint64 `json:"floor"`
	Deleted int    `json:"deleted"`
}

// Run compacts.
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
	out := make([]acksCompactJSON, 0, len(scopes))
	for _, sc := range scopes {
		floor, err := st.ScopeFloor(ctx, sc)
		if err != nil {
			return err
		}
		recs, err := st.Compactable(ctx, sc)
		if err != nil {
			return err
		}
		n, err := forgetWithProgress(ctx, env, st, recs, "compacting scope "+acks.ScopeDisplay(sc))
		if err != nil {
			return fmt.Errorf("compact scope %q: %w", acks.ScopeDisplay(sc), err)
		}
		out = append(out, acksCompactJSON{Scope: acks.ScopeDisplay(sc), Floor: floor, Deleted: n})
	}
	if p.JSON {
		return p.PrintJSON(out)
	}
	if len(out) == 0 {
		p.Printf("No ack records in bucket %s.\n", c.Bucket)
		return nil
	}
	for _, o := range out {
		p.Printf("scope %s: deleted %d done records at or below floor %d\n", o.Scope, o.Deleted, o.Floor)
	}
	return nil
}
