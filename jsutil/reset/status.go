package reset

import (
	"context"
	"encoding/json"
	"slices"
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
	// LagMessages is Pending+AckPending. LagNS is how far behind real time
	// the ack floor is: now minus the time of the ack floor message (of
	// the stream's first message when nothing is acknowledged); 0 when
	// the consumer is caught up.
	LagMessages uint64 `json:"lag_messages"`
	LagNS       int64  `json:"lag_ns"`
	// Created is when the consumer was created.
	Created time.Time `json:"created"`
	// Config is the configuration as the server reports it.
	Config json.RawMessage `json:"config"`
	// Cluster is the consumer's replica placement (nil on a single server).
	Cluster *jetstream.ClusterInfo `json:"cluster"`
}

// Describe reads one consumer's status.
func Describe(ctx context.Context, js jetstream.JetStream, stream, consumer string, now time.Time) (*Status, error) {
	p, err := newPlanner(ctx, js, stream, Options{})
	if err != nil {
		return nil, jsutil.Wrap(err, "consumer %q on %q", consumer, stream)
	}
	st, err := loadConsumer(ctx, js, stream, consumer)
	if err != nil {
		return nil, jsutil.Wrap(err, "consumer %q on %q", consumer, stream)
	}
	return p.status(ctx, st, now), nil
}

// List reads the status of every consumer of stream, sorted by name.
func List(ctx context.Context, js jetstream.JetStream, stream string, now time.Time) ([]*Status, error) {
	p, err := newPlanner(ctx, js, stream, Options{})
	if err != nil {
		return nil, jsutil.Wrap(err, "list consumers of %q", stream)
	}
	names := p.stream.ConsumerNames(ctx)
	var all []string
	for n := range names.Name() {
		all = append(all, n)
	}
	if err := names.Err(); err != nil {
		return nil, jsutil.Wrap(err, "list consumers of %q", stream)
	}
	slices.Sort(all)
	out := []*Status{}
	for _, n := range all {
		st, err := loadConsumer(ctx, js, stream, n)
		if err != nil {
			return nil, jsutil.Wrap(err, "consumer %q on %q", n, stream)
		}
		out = append(out, p.status(ctx, st, now))
	}
	return out, nil
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
	s.DeliveredTime = p.msgTime(ctx, s.Delivered)
	s.AckFloorTime = p.msgTime(ctx, s.AckFloor)
	s.LagMessages = s.Pending + uint64(max(s.AckPending, 0))
	if s.LagMessages > 0 {
		ref := s.AckFloorTime
		if ref == nil {
			ref = p.msgTime(ctx, max(p.info.State.FirstSeq, 1))
		}
		if ref != nil && now.After(*ref) {
			s.LagNS = now.Sub(*ref).Nanoseconds()
		}
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
