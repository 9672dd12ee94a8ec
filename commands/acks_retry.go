package commands

import (
	"context"
	"fmt"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/jsctl/jsctl/jsutil/audit"
)

// AcksRetryCmd runs failed messages again.
type AcksRetryCmd struct {
	acksBucketFlag
	Scope       string        `name:"scope" required:"" placeholder:"NAME" predictor:"scope" help:"Scope of the failed records (e.g. ORDERS.billing)."`
	Seq         uint64        `name:"seq" placeholder:"N" help:"Retry the failed record made for stream sequence N."`
	Key         string        `name:"key" placeholder:"KEY" help:"Retry the failed record of dedup key KEY (as JSCTL_KEY shows it, unescaped)."`
	AllFailed   bool          `name:"all-failed" help:"Retry every failed record of the scope."`
	Stream      string        `name:"stream" placeholder:"STREAM" predictor:"stream" help:"Stream holding the messages (default: the stream of the scope's consumers)."`
	Exec        string        `name:"exec" required:"" placeholder:"CMD" help:"Command run with sh -c (on Windows cmd /d /s /c; or --shell) once per message (or per batch with --batch), as in jsctl consume; exit 0 marks the message done."`
	Batch       int           `name:"batch" default:"0" placeholder:"N" help:"Run CMD once per batch of up to N messages, NDJSON on its stdin as in consume; 0 = once per message."`
	Lease       time.Duration `name:"lease" default:"30s" placeholder:"D" help:"Claim lease, renewed while CMD runs (whole seconds; at least 15s on a replicated bucket)."`
	StopTimeout time.Duration `name:"stop-timeout" default:"10s" placeholder:"D" help:"On SIGINT/SIGTERM, how long a running command may finish before its process group gets SIGTERM; a command so stopped is released: its failed record is kept as it was."`
	DeadLetter  string        `name:"dead-letter" placeholder:"SUBJECT" help:"Publish a message that fails again to SUBJECT (a new dead letter) before keeping it failed."`
	shellFlag                 // --shell (exec_shell.go)
	changeFlags
}

// Help is the long help of acks retry.
func (AcksRetryCmd) Help() string {
	return `Runs failed messages again: each selected failed record's message is read from the
stream by its sequence and CMD runs on it through the same claim -> done path as
jsctl consume (the claim takes the failed record over by compare-and-set; a lease
renewed while CMD runs; exit 0 makes the record done). CMD gets the same stdin and
JSCTL_* variables as in consume, plus JSCTL_RETRY=1; JSCTL_CONSUMER is empty and
JSCTL_DELIVERIES is the count the record kept. A message that fails again keeps a
final failed record with the new reason (and, with --dead-letter, is dead-lettered
again under a new message ID). Messages run one at a time, or in batches with
--batch. On SIGINT/SIGTERM no other message starts, and a running CMD may finish for
--stop-timeout (default 10s); then its process group gets SIGTERM and its message is
released: its failed record is written back as it was.

Select with --seq, --key or --all-failed. Only failed records are retried: a record
that is done or claimed when its turn comes is skipped (duplicate or busy), one
whose dead letter is pending waits for jsctl consume to publish it, and one whose
message the stream no longer holds fails. A sequence-keyed failed record of an earlier
stream of the name (deleted and created again since) is of another message than the one
the stream now holds under its sequence: it is reported, not retried and kept (jsctl
acks forget removes it). Without --execute this prints the plan
and changes nothing; with it, at a terminal it asks first unless --yes.

--json prints {"executed","bucket","scope","stream","command","records":[...]} and,
once executed, "results" (one object per message, as consume's --json lines) and
"summary" {"processed","failed","skipped"}. The exit status is 1 when a message
failed again.

Examples:
  jsctl acks retry --scope ORDERS.billing --all-failed --exec ./bill.sh
  jsctl acks retry --scope ORDERS.billing --all-failed --exec ./bill.sh --execute
  jsctl acks retry --scope ORDERS.billing --seq 42 --exec ./bill.sh --execute --json
  jsctl acks retry --scope ORDERS.billing --key order-1234 --exec ./bill.sh --execute
  jsctl acks retry --scope ORDERS.loader --all-failed --batch 100 --exec './load.sh' --execute`
}

// Validate checks the flags.
func (c *AcksRetryCmd) Validate() error {
	if err := c.changeFlags.validate(); err != nil {
		return err
	}
	n := 0
	for _, set := range []bool{c.Seq != 0, c.Key != "", c.AllFailed} {
		if set {
			n++
		}
	}
	switch {
	case n != 1:
		return jsutil.Errorf(jsutil.ErrBadInput, "select records with exactly one of --seq, --key or --all-failed")
	case c.Exec == "":
		return jsutil.Errorf(jsutil.ErrBadInput, "--exec must not be empty")
	case c.Batch < 0 || c.Batch > acks.MaxBatch:
		return jsutil.Errorf(jsutil.ErrBadInput, "--batch must be from 0 to %d, got %d", acks.MaxBatch, c.Batch)
	case c.Lease < time.Second || c.Lease%time.Second != 0:
		return jsutil.Errorf(jsutil.ErrBadInput, "--lease must be whole seconds, at least 1s, got %v", c.Lease)
	case c.StopTimeout < 0:
		return jsutil.Errorf(jsutil.ErrBadInput, "--stop-timeout must not be negative, got %v", c.StopTimeout)
	}
	return nil
}

// acksRetryJSON is retry's --json output.
type acksRetryJSON struct {
	Executed bool              `json:"executed"`
	Bucket   string            `json:"bucket"`
	Scope    string            `json:"scope"`
	Stream   string            `json:"stream"`
	Command  string            `json:"command"`
	Records  []acksRecordJSON  `json:"records"`
	Results  []consumeLineJSON `json:"results,omitempty"`
	Summary  *acksRetrySummary `json:"summary,omitempty"`
}

type acksRetrySummary struct {
	Processed int `json:"processed"`
	Failed    int `json:"failed"`
	Skipped   int `json:"skipped"`
	// Released: stopped by SIGINT/SIGTERM, the record kept as it was.
	Released int `json:"released"`
}

// Run prints the plan or retries.
func (c *AcksRetryCmd) Run(ctx context.Context, env *Env) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	scope := acks.ScopeName(c.Scope)
	st, err := c.openScope(ctx, env, scope)
	if err != nil {
		return err
	}
	recs, err := c.selectRecords(ctx, env, st, scope)
	if err != nil {
		return err
	}
	stream := c.Stream
	if stream == "" && len(recs) > 0 {
		if stream, err = st.ScopeStream(ctx, scope); err != nil {
			return fmt.Errorf("%w (give --stream)", err)
		}
	}
	// A failed record of an earlier stream of the name is of another
	// message than this stream's of its sequence: it proves nothing and
	// is not retried (acks forget removes it when asked).
	recs = c.withoutStale(ctx, env, st, stream, recs)
	out := acksRetryJSON{Bucket: c.Bucket, Scope: acks.ScopeDisplay(scope), Stream: stream, Command: c.Exec, Records: acksRecordsOf(recs)}
	if len(recs) == 0 {
		if p.JSON {
			return p.PrintJSON(out)
		}
		p.Printf("No failed ack records in scope %s; nothing to retry.\n", out.Scope)
		return nil
	}
	apply, err := askApply(ctx, env, p, applyRequest{
		changeFlags: c.changeFlags, Changes: len(recs), Action: fmt.Sprintf("retry failed messages of scope %q", out.Scope),
		Print: func(note string) error {
			if p.JSON {
				return p.PrintJSON(out)
			}
			if err := acksTable(p, recs); err != nil {
				return err
			}
			p.Printf("\nPlan: run %q again on %s of stream %s (scope %s).\n", c.Exec, plural(len(recs), "failed message", "failed messages"), stream, out.Scope)
			if note != "" {
				p.Printf("%s\n", note)
			}
			return nil
		},
	})
	if err != nil || !apply {
		return err
	}
	ch, err := env.acksChange(ctx, audit.AcksRetry, scope)
	if err != nil {
		return err
	}
	var sum acksRetrySummary
	err = c.retry(ctx, env, p, st, recs, out, &sum)
	end := acksEnd(c.Bucket, scope, err, map[string]any{"selected": len(recs), "processed": sum.Processed, "failed": sum.Failed, "skipped": sum.Skipped, "released": sum.Released})
	end.Target = fmt.Sprintf("%d failed records", len(recs))
	ch.ended(ctx, end)
	return ch.close(err)
}

// withoutStale judges recs against stream, the stream their messages are
// read from (the judgement consume and acks ls make), reports those of an
// earlier stream of the name and returns the others.
func (c *AcksRetryCmd) withoutStale(ctx context.Context, env *Env, st *acks.Store, stream string, recs []acks.Record) []acks.Record {
	if len(recs) == 0 {
		return recs
	}
	st.JudgeRecords(ctx, stream, recs)
	keep := recs[:0:0]
	for _, r := range recs {
		if r.Stale != "" {
			fmt.Fprintf(env.Stderr, "jsctl: warning: %s: not retried (jsctl acks forget --from-seq %d --to-seq %d removes it)\n", Escape(r.Stale), r.Seq, r.Seq)
			continue
		}
		keep = append(keep, r)
	}
	return keep
}

// selectRecords finds the failed records the flags select.
func (c *AcksRetryCmd) selectRecords(ctx context.Context, env *Env, st *acks.Store, scope string) ([]acks.Record, error) {
	if c.AllFailed {
		return st.List(ctx, acks.Filter{Scope: scope, State: acks.StateFailed, SkipCorrupt: func(err error) { reportCorrupt(env, err) }})
	}
	var r acks.Record
	if c.Seq != 0 {
		recs, err := st.List(ctx, acks.Filter{Scope: scope, FromSeq: c.Seq, ToSeq: c.Seq, SkipCorrupt: func(err error) { reportCorrupt(env, err) }})
		if err != nil {
			return nil, err
		}
		if len(recs) == 0 {
			return nil, jsutil.Errorf(jsutil.ErrNotFound, "no ack record for stream sequence %d in scope %q of bucket %q", c.Seq, c.Scope, c.Bucket)
		}
		r = recs[0]
		for _, x := range recs {
			if x.State == acks.StateFailed {
				r = x
			}
		}
	} else {
		var err error
		if r, err = st.FindRecord(ctx, scope, c.Key); err != nil {
			return nil, err
		}
	}
	if r.State != acks.StateFailed {
		return nil, jsutil.Errorf(jsutil.ErrConflict, "the ack record of key %q (message %d) in scope %q is %s, not failed: nothing to retry (jsctl acks forget makes a message run again on a rewind)", r.Key, r.Seq, c.Scope, r.State)
	}
	return []acks.Record{r}, nil
}

func (c *AcksRetryCmd) retry(ctx context.Context, env *Env, p *Printer, st *acks.Store, recs []acks.Record, out acksRetryJSON, sum *acksRetrySummary) error {
	run, err := c.handlerRun(c.Exec)
	if err != nil {
		return err
	}
	h := execHandler{run: run, lingered: &lingerNotes{}, log: env.stderrLog()}
	opts := []acks.ProcessOption{acks.WithLease(c.Lease), acks.WithDeadLetter(c.DeadLetter), acks.WithDrainTimeout(max(c.StopTimeout, time.Nanosecond))}
	var results []acks.Result
	if c.Batch > 0 {
		results, err = st.RetryBatch(ctx, out.Stream, recs, func(hctx context.Context, ds []acks.Delivery) ([]error, error) {
			return h.runBatch(hctx, ds, env.Stderr)
		}, c.Batch, opts...)
	} else {
		results, err = st.Retry(ctx, out.Stream, recs, func(hctx context.Context, d acks.Delivery) error {
			return h.runExec(hctx, d, env.Stderr)
		}, opts...)
	}
	if err != nil {
		return err
	}
	if w := h.lingered.warning(); w != "" {
		fmt.Fprintf(env.Stderr, "jsctl: warning: %s\n", w)
	}
	out.Executed, out.Summary = true, sum
	for _, r := range results {
		if r.DeadLetterRefused != "" {
			fmt.Fprintf(env.Stderr, "jsctl: warning: %s\n", Escape(r.DeadLetterRefused))
		}
		switch r.Action {
		case acks.Processed:
			sum.Processed++
		case acks.Failed:
			sum.Failed++
		case acks.Released:
			sum.Released++
		default:
			sum.Skipped++
		}
		out.Results = append(out.Results, consumeLineOf(r))
		if !p.JSON {
			p.Printf("message %d (key %s): %s\n", r.Seq, Preview([]byte(r.Key), 60), retryOutcome(r))
		}
	}
	if p.JSON {
		if err := p.PrintJSON(out); err != nil {
			return err
		}
	} else {
		p.Printf("retried %s of scope %s: processed %d, failed %d, skipped %d", plural(len(results), "message", "messages"), out.Scope, sum.Processed, sum.Failed, sum.Skipped)
		if sum.Released > 0 {
			p.Printf(", released %d", sum.Released)
		}
		p.Printf("\n")
	}
	if n := len(recs) - len(results) + sum.Released; n > 0 {
		return jsutil.Errorf(jsutil.ErrCancelled, "retry interrupted: %d of %d messages not run to the end (%d stopped and released, their records kept as they were)", n, len(recs), sum.Released)
	}
	if sum.Failed > 0 {
		return fmt.Errorf("%d of %d retried messages failed again (their records stay failed)", sum.Failed, len(results))
	}
	return nil
}

// retryOutcome says what happened to one retried message.
func retryOutcome(r acks.Result) string {
	switch r.Action {
	case acks.Processed:
		return "processed, the record is done"
	case acks.Duplicate:
		return "skipped: its record is done"
	case acks.Busy:
		return "skipped: another worker holds its claim"
	case acks.Released:
		return "released: stopped after --stop-timeout; its record is kept as it was"
	}
	s := "failed"
	if r.Err != nil {
		s += ": " + r.Err.Error()
	}
	if r.DeadLetterSeq != 0 {
		s += fmt.Sprintf("; dead-lettered as message %d of stream %s", r.DeadLetterSeq, r.DeadLetterStream)
	}
	return s
}
