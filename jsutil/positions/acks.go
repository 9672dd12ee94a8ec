package positions

// Every call into jsutil/acks is in this file: that package is being
// reworked (floors become per consumer), and only this file should have to
// follow it.

import (
	"context"
	"errors"
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
	out := &AckRecords{
		Bucket: a.bucket, Scope: acks.ScopeDisplay(scope),
		Records: st.Records, Claims: st.Claims, Done: st.Done, Failed: st.Failed,
	}
	for _, f := range st.Floors {
		if f.Stream == stream && f.Consumer == consumer && f.Corrupt == "" {
			out.Floor = f.Seq
		}
	}
	if stale && st.Claims > 0 {
		claims, err := a.store.List(ctx, acks.Filter{Scope: scope, State: acks.StateClaim, SkipCorrupt: func(error) {}})
		if err != nil {
			return nil, err
		}
		for _, r := range claims {
			if !r.LeaseExpires.IsZero() && r.LeaseExpires.Before(now) {
				out.StaleClaims++
			}
		}
	}
	return out, nil
}
