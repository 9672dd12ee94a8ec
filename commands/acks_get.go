package commands

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/acks"
)

// AcksGetCmd shows one ack record.
type AcksGetCmd struct {
	acksBucketFlag
	Scope string `arg:"" predictor:"scope" help:"Scope of the record (e.g. ORDERS.billing)."`
	Key   string `arg:"" optional:"" help:"Dedup key: the key header's value, or the stream sequence of a message without it."`
	Seq   uint64 `name:"seq" placeholder:"N" help:"Find the record made for stream sequence N instead (whatever its key)."`
}

// Help is the long help of acks get.
func (AcksGetCmd) Help() string {
	return `Shows one ack record: its state, the stream sequence it was made for, the key
spec that produced its key, the fencing token, the worker, when its lease runs out
(a claim) or when the server removes it (done and failed records, kept for the
retention), and, for a failed record, the reason and its dead letter. KEY is looked
up as a key from a header, a JSON field, the subject or joined parts (as
JSCTL_KEY shows it, unescaped), then (when it is a number) as a stream sequence key.

Examples:
  jsctl acks get ORDERS.billing order-1234
  jsctl acks get ORDERS.billing 42
  jsctl acks get ORDERS.billing 'eu|A-1001'
  jsctl acks get ORDERS.billing --seq 42 --json`
}

// Validate checks the arguments.
func (c *AcksGetCmd) Validate() error {
	if (c.Key == "") == (c.Seq == 0) {
		return jsutil.Errorf(jsutil.ErrBadInput, "give either KEY or --seq")
	}
	return nil
}

// Run prints the record.
func (c *AcksGetCmd) Run(ctx context.Context, env *Env) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	scope := acks.ScopeName(c.Scope)
	st, err := c.openScope(ctx, env, scope)
	if err != nil {
		return err
	}
	r, err := c.find(ctx, env, st, scope)
	if err != nil {
		return err
	}
	reportStale(env, []acks.Record{r})
	if p.JSON {
		return p.PrintJSON(acksRecordOf(r))
	}
	lease := "-"
	if !r.LeaseExpires.IsZero() {
		lease = p.Time(r.LeaseExpires)
	}
	spec := r.KeySpec
	if spec == "" {
		spec = "-"
	}
	expires := "-"
	if !r.Expires.IsZero() {
		expires = fmt.Sprintf("%s (kept %s)", p.Time(r.Expires), DurationText(r.Retention))
	}
	rows := [][]string{
		{"Scope", acks.ScopeDisplay(r.Scope)},
		{"Key", Preview([]byte(r.Key), 200) + " (" + string(r.KeyFrom) + ")"},
		{"Key spec", Escape(spec)},
		{"KV key", r.KVKey},
		{"State", stateText(r)},
		{"Stream sequence", strconv.FormatUint(r.Seq, 10)},
		{"Written", p.Time(r.Time)},
		{"Revision", strconv.FormatUint(r.Revision, 10)},
		{"Fence", strconv.FormatUint(r.Fence, 10)},
		{"Deliveries", strconv.FormatUint(r.Deliveries, 10)},
		{"Worker", Escape(r.Worker)},
		{"Payload hash", Escape(r.Hash)},
		{"Lease expires", lease},
		{"Expires", expires},
	}
	if r.State == acks.StateFailed {
		rows = append(rows, []string{"Reason", Preview([]byte(r.Reason), 500)})
	}
	switch dl := r.DeadLetter; {
	case dl != nil && dl.Pending:
		rows = append(rows, []string{"Dead letter", fmt.Sprintf("pending, to %s (id %s)", Escape(dl.Subject), Escape(dl.ID))})
	case dl != nil:
		rows = append(rows, []string{"Dead letter", fmt.Sprintf("message %d of stream %s (subject %s, id %s)", dl.Seq, Escape(dl.Stream), Escape(dl.Subject), Escape(dl.ID))})
	}
	if r.Stale != "" {
		rows = append(rows, []string{"Stale", "yes: of an earlier stream of the name (proves nothing)"})
	}
	for _, row := range rows {
		p.Printf("%-16s %s\n", row[0]+":", row[1])
	}
	return nil
}

func (c *AcksGetCmd) find(ctx context.Context, env *Env, st *acks.Store, scope string) (acks.Record, error) {
	if c.Seq != 0 {
		recs, err := st.List(ctx, acks.Filter{Scope: scope, FromSeq: c.Seq, ToSeq: c.Seq, SkipCorrupt: func(err error) { reportCorrupt(env, err) }})
		if err != nil {
			return acks.Record{}, err
		}
		if len(recs) == 0 {
			return acks.Record{}, jsutil.Errorf(jsutil.ErrNotFound, "no ack record for stream sequence %d in scope %q of bucket %q", c.Seq, c.Scope, c.Bucket)
		}
		return recs[0], nil
	}
	return st.FindRecord(ctx, scope, c.Key)
}
