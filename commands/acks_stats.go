package commands

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jsctl/jsctl/jsutil/acks"
)

// AcksStatsCmd counts records per scope.
type AcksStatsCmd struct {
	acksBucketFlag
	Scope string `name:"scope" placeholder:"NAME" predictor:"scope" help:"Only this scope; default every scope in the bucket."`
}

// Help is the long help of acks stats.
func (AcksStatsCmd) Help() string {
	return `Counts each scope's records by state, their size, their sequence range, the scope's
floor (every message at or below it is done), how many done records
"jsctl acks compact" would delete, and the retention in effect: how long done and
failed records are kept, as the scope's records were written (jsctl consume
--retention; a range such as 7d-30d when runs wrote them with different ones; from the
consumer floors when no record is left), capped by the bucket's max age if it has one;
"default" marks a scope whose records do not say (written by an earlier version).
--json adds retention_ns (the newest record's), retention_min_ns and retention_max_ns
(the range the records carry), retention_from ("records" or "default"), max_age_ns,
dead_lettered and dead_letter_pending. A record that does not read (or is not what its
key says: another message's, another scope's) is counted in CORRUPT and named by key on
standard error (--json: corrupt_keys); jsctl acks forget --corrupt removes such records.

Examples:
  jsctl acks stats
  jsctl acks stats --scope ORDERS.billing --json`
}

// Run prints the statistics.
func (c *AcksStatsCmd) Run(ctx context.Context, env *Env) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	st, err := c.openList(ctx, env, "")
	if err != nil {
		return err
	}
	if st == nil {
		if p.JSON {
			return p.PrintJSON([]acks.ScopeStats{})
		}
		p.Printf("%s", missingText("ack records", c.Bucket))
		return nil
	}
	var scopes []string
	if c.Scope != "" {
		scopes = []string{acks.ScopeName(c.Scope)}
	} else if scopes, err = st.Scopes(ctx); err != nil {
		return err
	}
	stats := make([]acks.ScopeStats, 0, len(scopes))
	// The text names each unreadable record by key, with why (--json
	// lists the keys: corrupt_keys).
	var bad []error
	for _, sc := range scopes {
		s, err := st.Stats(ctx, sc, func(err error) { bad = append(bad, err) })
		if err != nil {
			return err
		}
		stats = append(stats, s)
	}
	if p.JSON {
		return p.PrintJSON(stats)
	}
	for _, err := range bad {
		reportCorrupt(env, err)
	}
	reportFloors(env, stats)
	if len(stats) == 0 {
		p.Printf("No ack records in bucket %s.\n", c.Bucket)
		return nil
	}
	rows := make([][]string, 0, len(stats))
	for _, s := range stats {
		rows = append(rows, []string{
			s.Scope, strconv.Itoa(s.Records), strconv.Itoa(s.Claims), strconv.Itoa(s.Done), strconv.Itoa(s.Failed),
			strconv.Itoa(s.Corrupt), fmt.Sprint(s.Bytes), seqText(s.MinSeq), seqText(s.MaxSeq), strconv.FormatUint(s.Floor, 10),
			strconv.Itoa(s.Compactable), retentionText(s),
		})
	}
	return p.Table([]string{"SCOPE", "RECORDS", "CLAIMS", "DONE", "FAILED", "CORRUPT", "BYTES", "MIN SEQ", "MAX SEQ", "FLOOR", "COMPACTABLE", "RETENTION"}, rows,
		wideOnly("DONE", "BYTES", "MIN SEQ", "MAX SEQ", "RETENTION"))
}

// retentionText is a scope's retention for the table.
func retentionText(s acks.ScopeStats) string {
	t := DurationText(time.Duration(s.RetentionNS))
	if s.RetentionMinNS != s.RetentionMaxNS {
		t = DurationText(time.Duration(s.RetentionMinNS)) + "-" + DurationText(time.Duration(s.RetentionMaxNS))
	}
	if s.RetentionFrom == "default" {
		t += " (default)"
	}
	return t
}

func seqText(s uint64) string {
	if s == 0 {
		return "-"
	}
	return strconv.FormatUint(s, 10)
}

// reportFloors says, on standard error, what --json says of each scope's
// floors: a corrupt floor (FLOOR then shows 0: it is ignored) and the
// ranges and records of an earlier stream of the name.
func reportFloors(env *Env, stats []acks.ScopeStats) {
	for _, s := range stats {
		reportIgnored(env, s.Scope, s.Floors, s.StaleRecords, "FLOOR shows 0", "acks ls shows them")
	}
}

// reportIgnored warns of what a scope's floors and records hold that is
// ignored: corrupt floors (the scope's floor then counts as 0: shown as
// zero), ranges of an earlier stream of the name, and staleRecords
// sequence-keyed records of one (where tells what to do with them).
func reportIgnored(env *Env, scope string, floors []acks.Floor, staleRecords int, zero, where string) {
	for _, f := range floors {
		if f.Corrupt != "" {
			fmt.Fprintf(env.Stderr, "jsctl: warning: the floor of consumer %s in scope %s is corrupt (ignored, %s): %s\n", Escape(f.Consumer), Escape(scope), zero, Escape(f.Corrupt))
		}
		for _, w := range f.Stale {
			fmt.Fprintf(env.Stderr, "jsctl: warning: %s\n", Escape(w))
		}
	}
	if staleRecords > 0 {
		fmt.Fprintf(env.Stderr, "jsctl: warning: scope %s holds %d sequence-keyed records of an earlier stream of the name (they prove nothing; %s)\n", Escape(scope), staleRecords, where)
	}
}
