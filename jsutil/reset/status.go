package reset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// Status is a consumer's position as sequences and as message times, and
// how far it lags behind the stream.
type Status struct {
	Stream        string   `json:"stream"`
	Consumer      string   `json:"consumer"`
	Durable       bool     `json:"durable"`
	Push          bool     `json:"push"`
	DeliverPolicy string   `json:"deliver_policy"`
	AckPolicy     string   `json:"ack_policy"`
	Filters       []string `json:"filter_subjects"`
	// Delivered and AckFloor are stream sequences, with the stored times of
	// those messages (nil when there is none).
	Delivered     uint64     `json:"delivered"`
	DeliveredTime *time.Time `json:"delivered_time"`
	AckFloor      uint64     `json:"ack_floor"`
	AckFloorTime  *time.Time `json:"ack_floor_time"`
	// Pending counts messages not yet delivered; AckPending those
	// delivered and not yet acknowledged.
	Pending     uint64     `json:"pending"`
	AckPending  int        `json:"ack_pending"`
	Redelivered int        `json:"redelivered"`
	Waiting     int        `json:"waiting"`
	PushBound   bool       `json:"push_bound"`
	Paused      bool       `json:"paused"`
	PauseUntil  *time.Time `json:"pause_until"`
	// LagMessages is Pending+AckPending. LagNS is the age of the oldest
	// message the consumer can still receive, the first one above its ack
	// floor on its filter subjects (jsutil.ConsumerLag); 0 when the
	// consumer is caught up, nil when it could not be measured (Unknown
	// says why).
	LagMessages uint64 `json:"lag_messages"`
	LagNS       *int64 `json:"lag_ns"`
	// Unknown lists the figures that could not be measured (a read the
	// server's permissions refused, or that went unanswered) and why:
	// they are null, never 0.
	Unknown []jsutil.Unknown `json:"unknown,omitempty"`
	// Created is when the consumer was created.
	Created time.Time `json:"created"`
	// Config is the configuration as the server reports it.
	Config json.RawMessage `json:"config"`
	// Cluster is the consumer's replica placement (nil on a single server).
	Cluster *jetstream.ClusterInfo `json:"cluster"`
	// Unfinished is a change of the consumer that an interrupted run left
	// unfinished (`jsctl consumer recover` finishes it).
	Unfinished *Unfinished `json:"unfinished_change,omitempty"`
	// Missing marks a consumer that does not exist now but has an
	// unfinished change (an interrupted recreate deleted it); only Stream,
	// Consumer, Config (the recorded one) and Unfinished are set.
	Missing bool `json:"missing,omitempty"`
	// SkippedRecords lists the consumer's intent records that could not be
	// used (Describe only; ListChecked returns the stream's).
	SkippedRecords []BadRecord `json:"skipped_records,omitempty"`
}

// unfinishedWait bounds the look at the intent records in List and
// Describe (a user may be allowed to read consumers but not the bucket).
const unfinishedWait = 2 * time.Second

// unfinishedOf reads the stream's intent records, by consumer, and those
// that could not be used; empty when they cannot be read.
func unfinishedOf(ctx context.Context, js jetstream.JetStream, stream string, names ...string) (map[string]*Intent, []BadRecord) {
	ctx, cancel := context.WithTimeout(ctx, unfinishedWait)
	defer cancel()
	s := &intents{js: js, bucket: IntentBucket}
	list, bad, err := s.list(ctx, stream, names)
	out := map[string]*Intent{}
	if err != nil {
		return out, nil
	}
	for _, in := range list {
		out[in.Consumer] = in
	}
	return out, bad
}

func (st *Status) attach(in *Intent) {
	if in != nil {
		u := in.unfinished()
		st.Unfinished = &u
	}
}

// attachChecked is attach for a consumer that exists (cs): an intent
// recorded for an earlier stream or consumer of the name, or for a
// consumer edited since, is attached with the reason it no longer applies
// (recover leaves such a consumer as it is), never as a change to finish.
func (p *planner) attachChecked(st *Status, in *Intent, cs *consumerState) {
	st.attach(in)
	if in == nil || cs == nil {
		return
	}
	st.Unfinished.Stale = p.staleReason(in, cs)
}

// staleReason says why in no longer applies to the consumer as it is now
// (cs), "" when it may: the stream or the consumer was deleted and created
// again since the change started, or the configuration was edited since.
func (p *planner) staleReason(in *Intent, cs *consumerState) string {
	if why := p.streamRecreated(in.StreamCreated, "the change started"); why != "" {
		return why
	}
	if in.StreamCreated == nil {
		return "" // an older jsctl's record: recover decides by the configuration
	}
	if !cs.madeAt(in.Created) && !cs.madeAt(in.NewCreated) && !in.Creating {
		return fmt.Sprintf("consumer %q on %q was deleted and created again by someone else since the change started (created %s; the change found it created %s)",
			in.Consumer, in.Stream, timeText(cs.createdAt()), timeText(in.Created))
	}
	if cs.madeAt(in.Created) {
		oldCfg, err := rawOf(in.Config)
		cur := cs.raw
		if in.Pause != nil {
			cur, oldCfg = cur.withoutPause(), oldCfg.withoutPause()
		}
		if err == nil && len(oldCfg) > 0 && !sameExceptStart(cur, oldCfg) {
			return strings.TrimSuffix(editedReason(oldCfg, cur), ": left as it is")
		}
	}
	return ""
}

// Describe reads one consumer's status.
func Describe(ctx context.Context, js jetstream.JetStream, stream, consumer string, now time.Time) (*Status, error) {
	p, err := newPlanner(ctx, js, stream, Options{})
	if err != nil {
		return nil, jsutil.Wrap(err, "consumer %q on %q", consumer, stream)
	}
	pending, bad := unfinishedOf(ctx, js, stream, consumer)
	st, err := loadConsumer(ctx, js, stream, consumer)
	if in := pending[consumer]; in != nil && errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, jsutil.Errorf(jsutil.ErrNotFound, "consumer %q on %q: consumer not found; an unfinished %s (change %s, started %s by %s@%s) may have deleted it: finish it with: %s",
			consumer, stream, in.Method, esc(in.ID), in.Time.UTC().Format(time.RFC3339), esc(in.User), esc(in.Host), RecoverCommand(stream, consumer))
	}
	if err != nil {
		return nil, jsutil.Wrap(err, "consumer %q on %q", consumer, stream)
	}
	s := p.status(ctx, st, now)
	p.attachChecked(s, pending[consumer], st)
	if len(bad) > 0 {
		s.SkippedRecords = bad
	}
	return s, nil
}

// List reads the status of every consumer of stream, sorted by name.
func List(ctx context.Context, js jetstream.JetStream, stream string, now time.Time) ([]*Status, error) {
	out, _, err := ListChecked(ctx, js, stream, now)
	return out, err
}

// ListChecked is List, also returning the stream's intent records that
// could not be used (skipped).
func ListChecked(ctx context.Context, js jetstream.JetStream, stream string, now time.Time) ([]*Status, []BadRecord, error) {
	p, err := newPlanner(ctx, js, stream, Options{})
	if err != nil {
		return nil, nil, jsutil.Wrap(err, "list consumers of %q", stream)
	}
	names := p.stream.ConsumerNames(ctx)
	var all []string
	for n := range names.Name() {
		all = append(all, n)
	}
	if err := names.Err(); err != nil {
		return nil, nil, jsutil.Wrap(err, "list consumers of %q", stream)
	}
	pending, bad := unfinishedOf(ctx, js, stream)
	for n := range pending {
		if !slices.Contains(all, n) {
			all = append(all, n)
		}
	}
	slices.Sort(all)
	out := []*Status{}
	for _, n := range all {
		st, err := loadConsumer(ctx, js, stream, n)
		if in := pending[n]; in != nil && errors.Is(err, jetstream.ErrConsumerNotFound) {
			s := &Status{Stream: stream, Consumer: n, Missing: true, Filters: []string{}, Config: in.Config}
			s.attach(in)
			out = append(out, s)
			continue
		}
		if err != nil {
			return nil, nil, jsutil.Wrap(err, "consumer %q on %q", n, stream)
		}
		s := p.status(ctx, st, now)
		p.attachChecked(s, pending[n], st)
		out = append(out, s)
	}
	return out, bad, nil
}

func (p *planner) status(ctx context.Context, st *consumerState, now time.Time) *Status {
	info := st.info
	cfg := info.Config
	raw, _ := json.Marshal(st.raw)
	s := &Status{
		Stream: info.Stream, Consumer: info.Name, Durable: cfg.Durable != "",
		Push: cfg.DeliverSubject != "", DeliverPolicy: cfg.DeliverPolicy.String(), AckPolicy: ackPolicyName(cfg.AckPolicy),
		Filters:   filters(cfg),
		Delivered: info.Delivered.Stream, AckFloor: info.AckFloor.Stream,
		Pending: info.NumPending, AckPending: info.NumAckPending, Redelivered: info.NumRedelivered,
		Waiting: info.NumWaiting, PushBound: info.PushBound, Paused: info.Paused,
		Created: info.Created.UTC(), Config: raw, Cluster: info.Cluster,
	}
	if info.Paused && cfg.PauseUntil != nil {
		t := cfg.PauseUntil.UTC()
		s.PauseUntil = &t
	}
	var err error
	if s.DeliveredTime, err = p.msgTimeErr(ctx, s.Delivered); err != nil {
		s.Unknown = append(s.Unknown, jsutil.Unknown{Figure: "delivered_time", Reason: err.Error()})
	}
	if s.AckFloorTime, err = p.msgTimeErr(ctx, s.AckFloor); err != nil {
		s.Unknown = append(s.Unknown, jsutil.Unknown{Figure: "ack_floor_time", Reason: err.Error()})
	}
	lag := jsutil.ConsumerLag(ctx, p.msgs, info, p.info.State.FirstSeq, now)
	s.LagMessages = lag.Messages
	if lag.Age != nil {
		ns := lag.Age.Nanoseconds()
		s.LagNS = &ns
	} else {
		s.Unknown = append(s.Unknown, jsutil.Unknown{Figure: "lag_ns", Reason: jsutil.Wrap(lag.Err, "find the oldest message consumer %q can still receive on %q", info.Name, info.Stream).Error()})
	}
	return s
}

// ackPolicyName is the policy as the API spells it ("explicit").
func ackPolicyName(p jetstream.AckPolicy) string {
	b, err := json.Marshal(p)
	if err != nil {
		return p.String()
	}
	var s string
	_ = json.Unmarshal(b, &s)
	return s
}
