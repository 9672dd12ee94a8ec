package commands

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/acks"
)

// AcksCmd groups the ack-record commands.
type AcksCmd struct {
	Ls      AcksLsCmd      `cmd:"" help:"List ack records (filter by scope, state, sequence or time)."`
	Get     AcksGetCmd     `cmd:"" help:"Show one ack record."`
	Forget  AcksForgetCmd  `cmd:"" help:"Delete ack records so their messages run again (a plan unless --execute)."`
	Stats   AcksStatsCmd   `cmd:"" help:"Count records per scope, with each scope's floor."`
	Compact AcksCompactCmd `cmd:"" help:"Delete done records at or below each scope's floor."`
	Retry   AcksRetryCmd   `cmd:"" help:"Run failed messages again through claim -> done (a plan unless --execute)."`
}

// Help is the long help of the acks group.
func (AcksCmd) Help() string {
	return `Examples:
  jsctl acks stats                                  # records and floor per scope
  jsctl acks ls --scope ORDERS.billing --state failed
  jsctl acks get ORDERS.billing order-1234          # one record, by its dedup key
  jsctl acks retry --scope ORDERS.billing --all-failed --exec ./bill.sh`
}

// acksBucketFlag is the --bucket flag of the acks commands.
type acksBucketFlag struct {
	Bucket string `name:"bucket" default:"JSCTL_ACKS" placeholder:"NAME" help:"KV bucket of the ack records."`
}

// open opens the existing bucket (the acks commands never create it).
func (b acksBucketFlag) open(ctx context.Context, env *Env) (*acks.Store, error) {
	cl, err := env.Client(ctx)
	if err != nil {
		return nil, err
	}
	return acks.OpenExisting(ctx, cl.JS, b.Bucket)
}

// openScope opens the bucket and, unless scope is "", checks that the
// scope has records or a floor (naming the scopes that do when not).
func (b acksBucketFlag) openScope(ctx context.Context, env *Env, scope string) (*acks.Store, error) {
	st, err := b.open(ctx, env)
	if err != nil {
		return nil, err
	}
	if scope != "" {
		if err := st.KnownScope(ctx, scope); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// acksFilterFlags select records by state, stream sequence and time.
type acksFilterFlags struct {
	State   string `name:"state" placeholder:"STATE" help:"Only records in this state: claim, done or failed."`
	FromSeq uint64 `name:"from-seq" placeholder:"N" help:"Only records for stream sequence N or later."`
	ToSeq   uint64 `name:"to-seq" placeholder:"N" help:"Only records for stream sequence N or earlier."`
	Since   string `name:"since" placeholder:"TIME" predictor:"time" help:"Only records written at or after TIME."`
	Until   string `name:"until" placeholder:"TIME" predictor:"time" help:"Only records written at or before TIME."`
}

func (f acksFilterFlags) validate() error {
	if f.State != "" {
		if _, err := acks.ParseState(f.State); err != nil {
			return err
		}
	}
	if f.FromSeq != 0 && f.ToSeq != 0 && f.FromSeq > f.ToSeq {
		return jsutil.Errorf(jsutil.ErrBadInput, "--from-seq %d is after --to-seq %d", f.FromSeq, f.ToSeq)
	}
	return nil
}

// filter builds the library filter; scope is the encoded scope or "".
func (f acksFilterFlags) filter(env *Env, scope string) (acks.Filter, error) {
	out := acks.Filter{Scope: scope, State: acks.State(f.State), FromSeq: f.FromSeq, ToSeq: f.ToSeq}
	var err error
	if f.Since != "" {
		if out.Since, err = env.ParseTime(f.Since); err != nil {
			return out, err
		}
	}
	if f.Until != "" {
		if out.Until, err = env.ParseTime(f.Until); err != nil {
			return out, err
		}
	}
	if !out.Since.IsZero() && !out.Until.IsZero() && out.Since.After(out.Until) {
		return out, jsutil.Errorf(jsutil.ErrBadInput, "--since is after --until")
	}
	return out, nil
}

// acksRecordJSON is one record in --json output.
type acksRecordJSON struct {
	Scope        string `json:"scope"`
	Key          string `json:"key"`
	KeyFrom      string `json:"key_from"`
	KVKey        string `json:"kv_key"`
	State        string `json:"state"`
	Seq          uint64 `json:"seq"`
	Time         string `json:"time"`
	Revision     uint64 `json:"revision"`
	Fence        uint64 `json:"fence"`
	Deliveries   uint64 `json:"deliveries"`
	Worker       string `json:"worker"`
	Hash         string `json:"hash"`
	LeaseExpires string `json:"lease_expires,omitempty"`
	Size         int    `json:"size"`
	Failures     int    `json:"failures,omitempty"`
	Final        bool   `json:"final,omitempty"`
	Reason       string `json:"reason,omitempty"`
	KeySpec      string `json:"key_spec,omitempty"`
	// RetentionNS and Expires: how long a done or failed record is kept,
	// and when the server removes it (absent in records of earlier versions).
	RetentionNS int64               `json:"retention_ns,omitempty"`
	Expires     string              `json:"expires,omitempty"`
	DeadLetter  *acks.DeadLetterRef `json:"dead_letter,omitempty"`
	// Stale: a sequence-keyed record of an earlier stream of the name.
	Stale string `json:"stale,omitempty"`
	// Corrupt: the record does not read (acks forget --corrupt).
	Corrupt string `json:"corrupt,omitempty"`
}

func acksRecordOf(r acks.Record) acksRecordJSON {
	j := acksRecordJSON{
		Scope: acks.ScopeDisplay(r.Scope), Key: r.Key, KeyFrom: string(r.KeyFrom), KVKey: r.KVKey,
		State: string(r.State), Seq: r.Seq, Time: JSONTime(r.Time), Revision: r.Revision, Fence: r.Fence,
		Deliveries: r.Deliveries, Worker: r.Worker, Hash: r.Hash, Size: r.Size,
		Failures: r.Failures, Final: r.Final, Reason: r.Reason, KeySpec: r.KeySpec,
		RetentionNS: int64(r.Retention), DeadLetter: r.DeadLetter, Stale: r.Stale, Corrupt: r.Corrupt,
	}
	if !r.LeaseExpires.IsZero() {
		j.LeaseExpires = JSONTime(r.LeaseExpires)
	}
	if !r.Expires.IsZero() {
		j.Expires = JSONTime(r.Expires)
	}
	return j
}

func acksRecordsOf(recs []acks.Record) []acksRecordJSON {
	out := make([]acksRecordJSON, 0, len(recs))
	for _, r := range recs {
		out = append(out, acksRecordOf(r))
	}
	return out
}

// acksTable prints records as a table.
func acksTable(p *Printer, recs []acks.Record) error {
	rows := make([][]string, 0, len(recs))
	for _, r := range recs {
		lease := "-"
		if !r.LeaseExpires.IsZero() {
			lease = p.TableTime(r.LeaseExpires)
		}
		rows = append(rows, []string{
			acks.ScopeDisplay(r.Scope), PreviewCell([]byte(r.Key), 40), string(r.KeyFrom), strconv.FormatUint(r.Seq, 10),
			stateText(r), p.TableTime(r.Time), strconv.FormatUint(r.Fence, 10), strconv.FormatUint(r.Deliveries, 10), r.Worker, lease,
		})
	}
	return p.Table([]string{"SCOPE", "KEY", "KEY FROM", "SEQ", "STATE", "TIME", "FENCE", "DELIVERIES", "WORKER", "LEASE EXPIRES"}, rows,
		wideOnly("KEY FROM", "FENCE", "LEASE EXPIRES"))
}

// stateText is a record's state for tables: a failed record says how many
// times it failed and whether for good ("failed 3x, final").
func stateText(r acks.Record) string {
	if r.Corrupt != "" {
		return "corrupt"
	}
	if r.State != acks.StateFailed {
		return string(r.State)
	}
	s := fmt.Sprintf("failed %dx", max(r.Failures, 1))
	if r.Final {
		s += ", final"
	}
	switch dl := r.DeadLetter; {
	case dl != nil && dl.Pending:
		s += ", dead letter pending"
	case dl != nil:
		s += ", dead-lettered"
	}
	return s
}

// forgetWithProgress deletes recs in chunks, with a progress bar at a
// terminal, and returns how many it deleted.
func forgetWithProgress(ctx context.Context, env *Env, st *acks.Store, recs []acks.Record, what string) (int, error) {
	bar := env.Progress(what)
	defer bar.Done()
	n := 0
	for start := 0; start < len(recs); start += 64 {
		k, err := st.Forget(ctx, recs[start:min(start+64, len(recs))])
		n += k
		if err != nil {
			return n, err
		}
		bar.Set(min(start+64, len(recs)), len(recs))
	}
	return n, nil
}

// reportCorrupt notes a corrupt record on standard error.
func reportCorrupt(env *Env, err error) {
	fmt.Fprintf(env.Stderr, "jsctl: warning: %v (skipped)\n", err)
}

// reportStale warns of the records of recs that belong to an earlier
// stream of their stream's name (they are listed, and prove nothing).
func reportStale(env *Env, recs []acks.Record) {
	now := time.Now()
	for _, r := range recs {
		if r.Stale != "" {
			fmt.Fprintf(env.Stderr, "jsctl: warning: %s\n", Escape(r.Stale))
		}
		if dl := r.DeadLetter; dl != nil && dl.Pending {
			if p := jsutil.RecordedSubjectProblem("its dead-letter subject", dl.Subject); p != "" {
				fmt.Fprintf(env.Stderr, "jsctl: warning: ack record %q names a pending dead letter that is never published: %s\n", r.KVKey, Escape(p))
			}
		}
		if p := r.LeaseProblem(now); p != "" {
			fmt.Fprintf(env.Stderr, "jsctl: warning: %s\n", Escape(p))
		}
	}
}
