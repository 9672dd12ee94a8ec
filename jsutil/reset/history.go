package reset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// History is kept in a KV bucket with one key per consumer and the bucket's
// per-key history holding the last HistoryDepth resets.
const (
	HistoryBucket = "JSCTL_RESET_HISTORY"
	HistoryDepth  = 64
)

// Record is one executed reset.
type Record struct {
	Stream   string    `json:"stream"`
	Consumer string    `json:"consumer"`
	Time     time.Time `json:"time"`
	Method   Method    `json:"method"`
	Target   Target    `json:"target"`
	From     From      `json:"from"`
	To       To        `json:"to"`
	Verified bool      `json:"verified"`
	// FromStart is the consumer's configured start before the reset, so an
	// undo of a recreate can restore its deliver policy.
	FromStart *Start `json:"from_start,omitempty"`
	// UndoOf is the revision of the record this reset undid (--to-previous).
	UndoOf uint64 `json:"undo_of,omitempty"`
	User   string `json:"user"`
	Host   string `json:"host"`
	// ChangeID is the change's id (its intent record's too).
	ChangeID string `json:"change_id,omitempty"`
	// Config is the consumer's full configuration exactly as the server
	// returned it before the change (for a create: the saved configuration
	// it was made from). --to-previous rebuilds a deleted consumer from it.
	Config json.RawMessage `json:"config,omitempty"`
	// NewConfig is the configuration after the change, from the server.
	NewConfig json.RawMessage `json:"new_config,omitempty"`
	// Recovered says `consumer recover` finished the change after the run
	// that started it was interrupted.
	Recovered bool `json:"recovered,omitempty"`
	// Reason is why the change was made (--reason), "" when none was given.
	Reason string `json:"reason,omitempty"`
	// StreamCreated, Created and NewCreated are when the server created
	// the stream, the consumer before the change and the consumer after it
	// (nil in records of an older jsctl; see identity.go).
	StreamCreated *time.Time `json:"stream_created,omitempty"`
	Created       *time.Time `json:"created,omitempty"`
	NewCreated    *time.Time `json:"new_created,omitempty"`
	// Revision is the record's KV revision (set when read).
	Revision uint64 `json:"revision"`
}

// Start is the start position part of a consumer's configuration.
type Start struct {
	DeliverPolicy string     `json:"deliver_policy"`
	OptStartSeq   uint64     `json:"opt_start_seq,omitempty"`
	OptStartTime  *time.Time `json:"opt_start_time,omitempty"`
}

func startOf(cfg jetstream.ConsumerConfig) *Start {
	return &Start{DeliverPolicy: cfg.DeliverPolicy.String(), OptStartSeq: cfg.OptStartSeq, OptStartTime: cfg.OptStartTime}
}

func (s *Start) equal(o *Start) bool {
	if s.DeliverPolicy != o.DeliverPolicy || s.OptStartSeq != o.OptStartSeq || (s.OptStartTime == nil) != (o.OptStartTime == nil) {
		return false
	}
	return s.OptStartTime == nil || s.OptStartTime.Equal(*o.OptStartTime)
}

// HistoryKey is the KV key of a consumer's history.
func HistoryKey(stream, consumer string) string {
	return jsutil.KeyToken(stream) + "." + jsutil.KeyToken(consumer)
}

// History lists the recorded resets of a consumer, oldest first. A missing
// bucket or key is an empty history. Records that cannot be used are
// skipped (HistoryChecked returns them).
func History(ctx context.Context, js jetstream.JetStream, bucket, stream, consumer string) ([]Record, error) {
	recs, _, err := HistoryChecked(ctx, js, bucket, stream, consumer)
	return recs, err
}

// HistoryChecked is History, also returning the records of the consumer's
// history that cannot be used (they do not parse, are another consumer's,
// or hold impossible values): reported by their key and revision and
// skipped, the others are still listed.
func HistoryChecked(ctx context.Context, js jetstream.JetStream, bucket, stream, consumer string) ([]Record, []BadRecord, error) {
	if bucket == "" {
		bucket = HistoryBucket
	}
	// An unknown stream is an error, not an empty history.
	if _, err := js.Stream(ctx, stream); err != nil {
		return nil, nil, jsutil.Wrap(err, "read reset history of consumer %q on %q", consumer, stream)
	}
	recs, bad, _, err := historyChecked(ctx, js, bucket, stream, consumer)
	return recs, bad, err
}

// history reads the records without checking the stream. Records that
// cannot be used are skipped.
func history(ctx context.Context, js jetstream.JetStream, bucket, stream, consumer string) ([]Record, error) {
	out, _, _, err := historyChecked(ctx, js, bucket, stream, consumer)
	return out, err
}

// historyChecked is history, also returning the skipped records and the
// latest record when it is among them.
func historyChecked(ctx context.Context, js jetstream.JetStream, bucket, stream, consumer string) ([]Record, []BadRecord, *BadRecord, error) {
	bad := []BadRecord{}
	kv, err := jsutil.OpenExistingKV(ctx, js, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return []Record{}, bad, nil, nil
	}
	if err != nil {
		return nil, nil, nil, jsutil.Wrap(err, "open reset history bucket %q", bucket)
	}
	entries, err := jsutil.KVHistory(ctx, kv, js.Options().DefaultTimeout, HistoryKey(stream, consumer))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return []Record{}, bad, nil, nil
	}
	if err != nil {
		return nil, nil, nil, jsutil.Wrap(err, "read reset history of consumer %q on %q", consumer, stream)
	}
	out := []Record{}
	var latestBad *BadRecord
	for _, e := range entries {
		if e.Operation() != jetstream.KeyValuePut {
			continue
		}
		var r Record
		p := badHistory(stream, consumer, e.Value(), &r)
		if p == "" {
			p = historyProblem(&r, time.Now())
		}
		if p != "" {
			b := BadRecord{Bucket: bucket, Key: e.Key(), Revision: e.Revision(), Problem: p}
			bad = append(bad, b)
			latestBad = &b
			continue
		}
		latestBad = nil
		r.Revision = e.Revision()
		out = append(out, r)
	}
	return out, bad, latestBad, nil
}

// Last returns the latest recorded reset of a consumer; it wraps
// jsutil.ErrNotFound when there is none. A latest record that cannot be
// used is an error: undoing the one before it would undo the wrong change.
func Last(ctx context.Context, js jetstream.JetStream, bucket, stream, consumer string) (*Record, error) {
	recs, _, bad, err := historyChecked(ctx, js, bucket, stream, consumer)
	if err != nil {
		return nil, err
	}
	if bad != nil {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "reset consumer %q on %q: its latest history record cannot be used: %s", consumer, stream, bad)
	}
	if len(recs) == 0 {
		return nil, jsutil.Errorf(jsutil.ErrNotFound, "reset consumer %q on %q: no earlier reset in history to undo", consumer, stream)
	}
	return &recs[len(recs)-1], nil
}

// historyKV opens the history bucket once per planner, creating it (with
// the stream's replicas) on first use.
func (p *planner) historyKV(ctx context.Context) (jetstream.KeyValue, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.history != nil {
		return p.history, nil
	}
	bucket := p.opts.HistoryBucket
	kv, err := jsutil.OpenKV(ctx, p.js, jetstream.KeyValueConfig{
		Bucket:      bucket,
		Description: "jsctl consumer reset history",
		History:     HistoryDepth,
		Replicas:    max(p.info.Config.Replicas, 1),
	}, true, orRequestTimeout(p.opts.Timeout), p.opts.Settle)
	if err != nil {
		return nil, jsutil.Wrap(err, "open reset history bucket %q", bucket)
	}
	p.history = kv
	return kv, nil
}

// record stores r. A write whose reply is lost is retried (within Settle)
// unless the history already holds r's change id, so a change is never
// recorded twice.
func (p *planner) record(ctx context.Context, r Record) error {
	ctx = context.WithoutCancel(ctx)
	bucket := p.opts.HistoryBucket
	kv, err := p.historyKV(ctx)
	if err != nil {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	key := HistoryKey(r.Stream, r.Consumer)
	rt := jsutil.RetryEvery(p.opts.Settle, 200*time.Millisecond)
	for {
		pctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
		_, err = kv.Put(pctx, key, b)
		cancel()
		if err == nil {
			return nil
		}
		err = jsutil.RequestError(p.js.Conn(), kvSubject(p.js, bucket, key), err)
		if !lost(err) || !rt.Again(ctx, err) {
			return jsutil.Wrap(err, "record reset of consumer %q on %q in %q", r.Consumer, r.Stream, bucket)
		}
		if ok, herr := recorded(ctx, p.js, bucket, r.Stream, r.Consumer, r.ChangeID); herr == nil && ok {
			return nil
		}
	}
}

// recorded reports whether the consumer's history holds change id.
func recorded(ctx context.Context, js jetstream.JetStream, bucket, stream, consumer, id string) (bool, error) {
	if id == "" {
		return false, nil
	}
	recs, err := history(ctx, js, bucket, stream, consumer)
	if err != nil {
		return false, err
	}
	for _, r := range recs {
		if r.ChangeID == id {
			return true, nil
		}
	}
	return false, nil
}

// checkHistory refuses a --to-previous change whose history record is of
// another stream or consumer than the one of that name now: the stream or
// the consumer (st; nil for one that no longer exists, rebuilt from the
// record) was deleted and created again since the record was written, so
// undoing it would move the new one to a position of the old one. A
// record written by an older jsctl (no creation times) is warned about.
func (p *planner) checkHistory(c *Change, rec *Record, st *consumerState) {
	since := fmt.Sprintf("history revision %d was recorded", rec.Revision)
	if rec.StreamCreated == nil {
		c.warn("history revision %d does not record when the stream and the consumer were created (written by an older jsctl): not checked that it is of this consumer", rec.Revision)
		return
	}
	why := p.streamCheck(rec.StreamCreated, since)
	if why == nil && st != nil {
		made := rec.NewCreated
		if made == nil {
			made = rec.Created
		}
		why = jsutil.RecordedConsumer(c.Stream, c.Consumer, made).Check(st.identity(), since)
	}
	if why != nil {
		c.refuseWith(why, ": its history is of the one before, so there is no earlier position of this one to go back to; to move it, give another target (--to-seq, --to-time, --to-ack-floor)")
	}
}

// NotOfThisConsumer says, per revision, which of a consumer's history
// records (recs) are of an earlier stream or consumer of the name: the
// stream or the consumer was deleted and created again since the record
// was written. Those records are kept (they are what happened), but they
// say nothing of the stream and the consumer as they are now. Records by
// an older jsctl (no creation times) are not judged.
func NotOfThisConsumer(ctx context.Context, js jetstream.JetStream, stream, consumer string, recs []Record) (map[uint64]string, error) {
	out := map[uint64]string{}
	if len(recs) == 0 {
		return out, nil
	}
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, jsutil.Wrap(err, "stream %q", stream)
	}
	var now *jsutil.Identity
	if c, err := s.Consumer(ctx, consumer); err == nil {
		id := jsutil.ConsumerIdentity(c.CachedInfo())
		now = &id
	} else if !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, jsutil.Wrap(err, "consumer %q on %q", consumer, stream)
	}
	streamNow := jsutil.StreamIdentity(s.CachedInfo())
	for _, rec := range recs {
		if rec.StreamCreated == nil {
			continue
		}
		since := fmt.Sprintf("history revision %d was recorded", rec.Revision)
		why := jsutil.RecordedStream(stream, rec.StreamCreated).Check(streamNow, since)
		if why == nil && now != nil {
			made := rec.NewCreated
			if made == nil {
				made = rec.Created
			}
			why = jsutil.RecordedConsumer(stream, consumer, made).Check(*now, since)
		}
		if why != nil {
			out[rec.Revision] = why.Error()
		}
	}
	return out, nil
}
