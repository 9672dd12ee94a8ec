package positions

// Every call into jsutil/acks is in this file: that package is being
// reworked (floors become per consumer), and only this file should have to
// follow it.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go/jetstream"
)

// AckRecords is what the ack-record bucket (jsctl consume, jsutil/acks)
// holds for a consumer's default scope (STREAM.CONSUMER).
type AckRecords struct {
	Bucket string `json:"bucket"`
	// Scope is the scope as --scope takes it ("ORDERS.billing").
	Scope string `json:"scope"`
	// Floor is the consumer's floor in the scope: every message of the
	// consumer at or below it was handled (see acks.Floor).
	Floor   uint64 `json:"floor"`
	Records int    `json:"records"`
	Claims  int    `json:"claims"`
	Done    int    `json:"done"`
	Failed  int    `json:"failed"`
	// StaleClaims counts claims whose lease ran out (not renewed by a
	// live worker); filled only when asked for.
	StaleClaims int `json:"stale_claims"`
	// Unreadable names each record of the scope that does not read (by
	// key, and why: it does not parse, sits under another message's key,
	// or holds numbers no run writes); Ignored says of each record and
	// floor range of an earlier stream of the name why it proves nothing
	// (the records in one sentence).
	// Neither is counted above: the counts are of this stream's readable
	// records.
	Unreadable []string `json:"unreadable,omitempty"`
	Ignored    []string `json:"ignored,omitempty"`
}

// Problems is what the scope holds that was not counted, one sentence
// each: the unreadable records, then the ignored ones.
func (a *AckRecords) Problems() []string {
	if a == nil {
		return nil
	}
	out := make([]string, 0, len(a.Unreadable)+len(a.Ignored))
	for _, u := range a.Unreadable {
		out = append(out, u+" (not counted)")
	}
	return append(out, a.Ignored...)
}

// ackReader reads consumers' scopes from one bucket, opened on first use;
// a missing bucket has no records.
type ackReader struct {
	js     jetstream.JetStream
	bucket string
	store  *acks.Store
	opened bool
}

func newAckReader(js jetstream.JetStream, bucket string) *ackReader {
	if bucket == "" {
		bucket = acks.DefaultBucket
	}
	return &ackReader{js: js, bucket: bucket}
}

// scope reads the default scope of stream/consumer; nil when the bucket or
// the scope has no records. With stale, it also counts the claims whose
// lease expired before now (a second read of the scope's claims).
func (a *ackReader) scope(ctx context.Context, stream, consumer string, stale bool, now time.Time) (*AckRecords, error) {
	if !a.opened {
		s, err := acks.OpenExisting(ctx, a.js, a.bucket)
		if err != nil && !errors.Is(err, jsutil.ErrNotFound) {
			return nil, err
		}
		a.store, a.opened = s, true
	}
	if a.store == nil {
		return nil, nil
	}
	scope := acks.DefaultScope(stream, consumer)
	st, err := a.store.Stats(ctx, scope)
	if errors.Is(err, jsutil.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// One judgement of the scope's records (jsutil/acks: unreadable,
	// misplaced, of an earlier stream), applied to the counts.
	out := &AckRecords{
		Bucket: a.bucket, Scope: acks.ScopeDisplay(scope),
		Records: st.Records - st.Corrupt - len(st.StaleList), Claims: st.Claims, Done: st.Done, Failed: st.Failed,
	}
	for _, err := range st.Unreadable {
		out.Unreadable = append(out.Unreadable, err.Error())
	}
	staleKeys := map[string]bool{}
	if n := len(st.StaleList); n > 0 {
		// One sentence for them all (a recreated stream leaves every
		// record of the earlier one), naming the first and both creation
		// times; acks ls lists each.
		out.Ignored = append(out.Ignored, fmt.Sprintf("%d sequence-keyed ack records of scope %q belong to an earlier stream of the name, not counted (jsctl acks ls lists them); the first: %s", n, acks.ScopeDisplay(scope), st.StaleList[0].Stale))
	}
	for _, r := range st.StaleList {
		staleKeys[r.KVKey] = true
		switch r.State {
		case acks.StateClaim:
			out.Claims--
		case acks.StateDone:
			out.Done--
		case acks.StateFailed:
			out.Failed--
		}
	}
	for _, f := range st.Floors {
		if f.Stream == stream && f.Consumer == consumer && f.Corrupt == "" {
			out.Floor = f.Seq
		}
		out.Ignored = append(out.Ignored, f.Stale...)
		if f.Corrupt != "" {
			out.Ignored = append(out.Ignored, fmt.Sprintf("the floor of consumer %q in scope %q is corrupt: %s: ignored", f.Consumer, acks.ScopeDisplay(scope), f.Corrupt))
		}
	}
	if stale && st.Claims > 0 {
		claims, err := a.store.List(ctx, acks.Filter{Scope: scope, State: acks.StateClaim, SkipCorrupt: func(error) {}})
		if err != nil {
			return nil, err
		}
		for _, r := range claims {
			if !staleKeys[r.KVKey] && !r.LeaseExpires.IsZero() && r.LeaseExpires.Before(now) {
				out.StaleClaims++
			}
		}
	}
	return out, nil
}
