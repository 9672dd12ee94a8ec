package jsutil

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Lag is how far a durable consumer is behind its stream: the one
// definition behind LAG and LAG TIME in consumer ls, consumer info, the
// picker and consumer check's lag and lag_time (docs/positions.md, "Lag").
type Lag struct {
	// Messages is the consumer's pending plus ack pending count, as its
	// info reports them.
	Messages uint64
	// Oldest is the oldest message the consumer can still receive: the
	// first message above its ack floor on its filter subjects (nil when
	// there is none, or when Err says it is not known).
	Oldest *MsgStamp
	// Age is how old Oldest is (now minus its stored time; 0 when there is
	// none to receive, or for a time ahead of now). It is nil when the
	// read that finds Oldest was refused or went unanswered: Err says why.
	Age *time.Duration
	// Err is why Age is not known.
	Err error
}

// ConsumerLag measures the lag of the consumer info describes, reading
// its stream's messages with msgs (firstSeq is the stream's first
// sequence, now the time to measure from).
//
// Oldest is found with one next-by-subject read per filter subject (one
// for a consumer of every subject) from max(ack floor + 1, firstSeq),
// keeping the lowest sequence: that is the first message the consumer has
// not had acknowledged, delivered (ack pending) or not (pending). It is
// not the ack floor's own message, nor the stream's first message, which
// may be on a subject the consumer does not take, or long acknowledged.
// A consumer with nothing pending (Messages 0) has an Age of 0 and costs
// no read.
func ConsumerLag(ctx context.Context, msgs *StreamMsgs, info *jetstream.ConsumerInfo, firstSeq uint64, now time.Time) Lag {
	lag := Lag{Messages: info.NumPending + uint64(max(info.NumAckPending, 0))}
	zero := time.Duration(0)
	if lag.Messages == 0 {
		lag.Age = &zero
		return lag
	}
	from := max(info.AckFloor.Stream+1, firstSeq, 1)
	filters := info.Config.FilterSubjects
	if info.Config.FilterSubject != "" {
		filters = []string{info.Config.FilterSubject}
	}
	if len(filters) == 0 {
		filters = []string{">"}
	}
	for _, f := range filters {
		m, err := msgs.Next(ctx, from, f)
		if err != nil {
			return Lag{Messages: lag.Messages, Err: err}
		}
		if m != nil && (lag.Oldest == nil || m.Seq < lag.Oldest.Seq) {
			lag.Oldest = m
		}
	}
	age := zero
	if lag.Oldest != nil && now.After(lag.Oldest.Time) {
		age = now.Sub(lag.Oldest.Time)
	}
	lag.Age = &age
	return lag
}

// Unknown is a figure that could not be measured, and why (a read the
// server's permissions refused, or that went unanswered). jsctl shows it
// as unknown (null in JSON) and says why, never as absent or as 0.
type Unknown struct {
	// Figure is the figure's JSON name ("lag_ns", "ack_floor_time").
	Figure string `json:"figure"`
	// Reason is the error that kept it unknown.
	Reason string `json:"reason"`
}

// String words it for a warning: "ack_floor_time unknown: <reason>".
func (u Unknown) String() string { return u.Figure + " unknown: " + u.Reason }
