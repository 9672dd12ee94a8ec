package positions

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Comparison is where one consumer of a snapshot is now against the
// snapshot.
type Comparison struct {
	Stream   string `json:"stream"`
	Consumer string `json:"consumer"`
	// Deleted is set when the consumer (or its stream) no longer exists;
	// the fields about now are then empty.
	Deleted bool `json:"deleted"`
	// Saved and Now are the ack floors then and now.
	Saved Position  `json:"saved"`
	Now   *Position `json:"now"`
	// MovedMessages counts the messages within the consumer's filter
	// between the saved and the current ack floor: positive when it moved
	// forward, negative when it moved back. MovedSequences is the same
	// distance in stream sequences.
	MovedMessages  int64 `json:"moved_messages"`
	MovedSequences int64 `json:"moved_sequences"`
	// MovedNS is the time between the messages at the two ack floors (nil
	// when either has no stored time).
	MovedNS *int64 `json:"moved_ns"`
	// ConfigChanges lists the configuration fields that differ, by name.
	ConfigChanges []ConfigChange `json:"config_changes"`
	// ConfigDiff is the saved configuration against the consumer's own or,
	// for a deleted consumer (a restore creates it from the saved one),
	// against the server's defaults (reset.DefaultConfig); fields that
	// change where messages go or whether they are acknowledged carry a
	// warning.
	ConfigDiff []reset.ConfigField `json:"config_diff"`
	// Warnings say what a restore would have to work around, such as a
	// saved position the stream no longer holds.
	Warnings []string `json:"warnings"`
}

// ConfigChange is one configuration field that differs from the snapshot:
// its JSON name and both values as JSON (null when absent).
type ConfigChange struct {
	Field string          `json:"field"`
	Saved json.RawMessage `json:"saved"`
	Now   json.RawMessage `json:"now"`
}

// Compare reads every consumer of snap and compares it with the snapshot.
func Compare(ctx context.Context, js jetstream.JetStream, snap *Snapshot, opts Options) ([]Comparison, error) {
	opts = opts.withDefaults()
	out := []Comparison{}
	for _, ss := range snap.Streams {
		r, err := openStream(ctx, js, ss.Name, opts)
		if err != nil && !isNotFound(err) {
			return nil, err
		}
		for i := range ss.Consumers {
			cs := &ss.Consumers[i]
			cmp := Comparison{Stream: ss.Name, Consumer: cs.Name, Saved: cs.AckFloor, ConfigChanges: []ConfigChange{}, ConfigDiff: []reset.ConfigField{}, Warnings: []string{}}
			if r == nil {
				cmp.Deleted = true
				cmp.Warnings = append(cmp.Warnings, "the stream no longer exists")
				out = append(out, cmp)
				continue
			}
			c, err := r.consumer(ctx, cs.Name)
			if isNotFound(err) {
				cmp.Deleted = true
				cmp.Warnings = append(cmp.Warnings, "the consumer was deleted; a restore recreates it from the saved configuration")
				cmp.diffDefaults(cs)
			} else if err != nil {
				return nil, err
			} else if err := cmp.fill(ctx, r, cs, c); err != nil {
				return nil, err
			} else if why := consumerRecreated(ss.Name, cs, c.Info); why != "" {
				cmp.Warnings = append(cmp.Warnings, why)
			}
			if err := jsutil.RecordedStream(ss.Name, ss.Created).Check(jsutil.StreamIdentity(r.info), "the snapshot"); err != nil {
				cmp.Warnings = append(cmp.Warnings, err.Error()+": its saved sequences name other messages; a restore is refused unless --by-time")
			}
			if next, first := cs.NextSequence(), r.info.State.FirstSeq; next < first {
				cmp.Warnings = append(cmp.Warnings, fmt.Sprintf("the stream no longer holds sequence %d (its first is %d); a restore starts at %d", next, first, first))
			}
			out = append(out, cmp)
		}
	}
	return out, nil
}

func (cmp *Comparison) fill(ctx context.Context, r *streamReader, cs *ConsumerSnapshot, c *Consumer) error {
	info := c.Info
	now := Position{StreamSeq: info.AckFloor.Stream, ConsumerSeq: info.AckFloor.Consumer, Time: c.AckFloorTime, TimeUnknown: c.unknownReason("ack_floor_time") != "", LastActive: utcOf(info.AckFloor.Last)}
	if reason := c.unknownReason("ack_floor_time"); reason != "" {
		cmp.Warnings = append(cmp.Warnings, "the time of the current ack floor is unknown, and so is how far in time the consumer moved: "+reason)
	}
	cmp.Now = &now
	from, to := cs.AckFloor.StreamSeq, now.StreamSeq
	cmp.MovedSequences = int64(to) - int64(from)
	if from != to {
		lo, hi := min(from, to), max(from, to)
		n, err := r.countBetween(ctx, c.Filters(), lo+1, hi)
		if err != nil {
			if ctx.Err() != nil {
				return jsutil.Wrap(err, "compare consumer %q on %q", c.Name, c.Stream)
			}
			// A work-queue stream allows no overlapping consumer, and
			// the user may not be allowed to make one: count sequences.
			n = hi - lo
			cmp.Warnings = append(cmp.Warnings, fmt.Sprintf("moved messages counted by sequence numbers (at most %d): %v", n, jsutil.Wrap(err, "count with a temporary consumer")))
		}
		cmp.MovedMessages = int64(n)
		if to < from {
			cmp.MovedMessages = -cmp.MovedMessages
		}
	}
	if cs.AckFloor.TimeUnknown {
		cmp.Warnings = append(cmp.Warnings, "the snapshot does not know the time of its saved ack floor (it could not be read when it was saved): how far in time the consumer moved is unknown")
	}
	if cs.AckFloor.Time != nil && now.Time != nil {
		d := now.Time.Sub(*cs.AckFloor.Time).Nanoseconds()
		cmp.MovedNS = &d
	}
	changes, err := DiffConfig(cs.Config, c.Config)
	if err != nil {
		return fmt.Errorf("compare configuration of consumer %q on %q: %w", c.Name, c.Stream, err)
	}
	cmp.ConfigChanges = changes
	if cmp.ConfigDiff, err = reset.DiffConfig(c.Config, cs.Config); err != nil {
		return fmt.Errorf("compare configuration of consumer %q on %q: %w", c.Name, c.Stream, err)
	}
	return nil
}

// diffDefaults sets ConfigDiff of a deleted consumer: its saved
// configuration against the server's defaults, each called-out field a
// warning (a restore creates the consumer from it).
func (cmp *Comparison) diffDefaults(cs *ConsumerSnapshot) {
	diff, err := reset.DiffConfig(reset.DefaultConfig, cs.Config)
	if err != nil {
		cmp.Warnings = append(cmp.Warnings, fmt.Sprintf("could not read the saved configuration: %v", err))
		return
	}
	cmp.ConfigDiff = diff
	for _, f := range diff {
		if f.Warning != "" {
			cmp.Warnings = append(cmp.Warnings, "saved configuration against the server's defaults: "+f.Warning)
		}
	}
}

// countBetween counts the stream's messages matching filters (all when
// none) with sequences in [from, to]. Without filters or deleted messages
// that is the difference of sequences; otherwise the server counts them
// for a short-lived consumer at each end.
func (r *streamReader) countBetween(ctx context.Context, filters []string, from, to uint64) (uint64, error) {
	st := r.info.State
	from, to = max(from, st.FirstSeq, 1), min(to, st.LastSeq)
	if from > to {
		return 0, nil
	}
	if len(filters) == 0 && st.NumDeleted == 0 {
		return to - from + 1, nil
	}
	a, err := r.pendingFrom(ctx, filters, from)
	if err != nil {
		return 0, err
	}
	b, err := r.pendingFrom(ctx, filters, to+1)
	if err != nil {
		return 0, err
	}
	if a < b {
		return 0, nil
	}
	return a - b, nil
}

// pendingFrom asks the server how many messages matching filters are at or
// after seq, with a temporary consumer (memory, one replica, no acks, gone
// after a few seconds if it cannot be deleted).
func (r *streamReader) pendingFrom(ctx context.Context, filters []string, seq uint64) (uint64, error) {
	if seq > r.info.State.LastSeq {
		return 0, nil
	}
	cfg := jetstream.ConsumerConfig{
		Name:              "jsctl_count_" + nats.NewInbox()[len(nats.InboxPrefix):],
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       seq,
		AckPolicy:         jetstream.AckNonePolicy,
		InactiveThreshold: 5 * time.Second,
		MemoryStorage:     true,
		Replicas:          1,
		Metadata:          map[string]string{"jsctl": "snapshot count"},
	}
	if len(filters) == 1 {
		cfg.FilterSubject = filters[0]
	} else {
		cfg.FilterSubjects = filters
	}
	rctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	create := jsutil.APIPrefix(r.js.Options()) + "CONSUMER.CREATE." + r.info.Config.Name + "." + cfg.Name
	wctx, stop := jsutil.EndOnRefusalPrefix(rctx, create)
	cons, err := r.stream.CreateConsumer(wctx, cfg)
	err = jsutil.RefusedCause(wctx, err)
	stop()
	if err != nil {
		return 0, jsutil.RequestError(r.js.Conn(), create, err)
	}
	n := cons.CachedInfo().NumPending
	_ = r.stream.DeleteConsumer(rctx, cfg.Name)
	return n, nil
}

// DiffConfig compares two raw consumer configurations field by field,
// ignoring the names and the metadata the server adds itself ("_nats."
// keys). Values are compared as JSON, so key order and spacing do not
// matter. It is reset.DiffConfig, seen from the snapshot's side.
func DiffConfig(saved, now json.RawMessage) ([]ConfigChange, error) {
	diff, err := reset.DiffConfig(now, saved)
	if err != nil {
		return nil, err
	}
	out := make([]ConfigChange, 0, len(diff))
	for _, f := range diff {
		out = append(out, ConfigChange{Field: f.Field, Saved: f.To, Now: f.From})
	}
	return out, nil
}

// consumerRecreated says, for a consumer that exists, that it is not the
// one the snapshot saved (it was deleted and created again since, by
// jsutil.Identity.Check), and what a restore does about it: it moves the
// consumer of that name now, keeping its own configuration. "" when it is
// the same consumer, or the snapshot does not say when it was created.
func consumerRecreated(stream string, cs *ConsumerSnapshot, now *jetstream.ConsumerInfo) string {
	err := jsutil.RecordedConsumer(stream, cs.Name, jsutil.TimePtr(cs.Created)).Check(jsutil.ConsumerIdentity(now), "the snapshot")
	if err == nil {
		return ""
	}
	return err.Error() + ": a restore moves the consumer of that name now to the saved position, keeping its own configuration"
}
