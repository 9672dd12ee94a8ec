package commands

import (
	"context"

	"github.com/jsctl/jsctl/jsutil/acks"
)

// AcksLsCmd lists ack records.
type AcksLsCmd struct {
	acksBucketFlag
	Scope string `name:"scope" placeholder:"NAME" predictor:"scope" help:"Only this scope (e.g. ORDERS.billing); default all."`
	acksFilterFlags
}

// Help is the long help of acks ls.
func (AcksLsCmd) Help() string {
	return `Lists ack records in bucket order. A scope is STREAM.CONSUMER unless consumers
share one with --scope. Corrupt records are reported on standard error and skipped.

Examples:
  jsctl acks ls
  jsctl acks ls --scope ORDERS.billing --state claim
  jsctl acks ls --scope ORDERS.billing --from-seq 100 --to-seq 200 --json
  jsctl acks ls --since "1h ago"`
}

// Validate checks the flags.
func (c *AcksLsCmd) Validate() error { return c.validate() }

// Run lists the records.
func (c *AcksLsCmd) Run(ctx context.Context, env *Env) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	scope := ""
	if c.Scope != "" {
		scope = acks.ScopeName(c.Scope)
	}
	f, err := c.filter(env, scope)
	if err != nil {
		return err
	}
	st, err := c.openList(ctx, env, scope)
	if err != nil {
		return err
	}
	if st == nil {
		if p.JSON {
			return p.PrintJSON(acksRecordsOf(nil))
		}
		p.Printf("%s", missingText("ack records", c.Bucket))
		return nil
	}
	f.SkipCorrupt = func(err error) { reportCorrupt(env, err) }
	recs, err := st.List(ctx, f)
	if err != nil {
		return err
	}
	reportStale(env, recs)
	if p.JSON {
		return p.PrintJSON(acksRecordsOf(recs))
	}
	if len(recs) == 0 {
		p.Printf("No ack records match in bucket %s.\n", c.Bucket)
		return nil
	}
	return acksTable(p, recs)
}
