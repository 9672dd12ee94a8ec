package reset

import (
	"context"
	"fmt"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/seek"
	"github.com/nats-io/nats.go/jetstream"
)

// Kind names a kind of target.
type Kind string

// Target kinds.
const (
	ToTime     Kind = "time"      // the message seek finds for Time (and Mode)
	ByDuration Kind = "duration"  // now minus Duration, as ToTime in after mode
	ToSeq      Kind = "sequence"  // stream sequence Seq
	ShiftBy    Kind = "shift"     // the ack floor's next sequence plus Shift
	ToEarliest Kind = "earliest"  // the stream's first sequence
	ToLatest   Kind = "latest"    // after the stream's last message
	ToAckFloor Kind = "ack-floor" // redeliver everything not acknowledged
	ToPrevious Kind = "previous"  // undo the last recorded reset
	ToSaved    Kind = "saved"     // each consumer to a sequence of its own (PlanMoves)
	ToConsumer Kind = "consumer"  // where another consumer of the stream is (Consumer, Position)
)

// Positions of another consumer that a ToConsumer target copies.
const (
	PositionAckFloor  = "ack-floor" // its ack floor + 1: what it has not had acknowledged
	PositionDelivered = "delivered" // its delivered sequence + 1: what it has not delivered
)

// Seek modes for time targets (as in jsutil/seek).
const (
	ModeAfter   = "after"
	ModeBefore  = "before"
	ModeNearest = "nearest"
)

// Target says where to move a consumer.
type Target struct {
	Kind     Kind          `json:"kind"`
	Time     time.Time     `json:"time,omitzero"`
	Mode     string        `json:"mode,omitempty"`
	Duration time.Duration `json:"duration,omitempty"`
	Seq      uint64        `json:"sequence,omitempty"`
	Shift    int64         `json:"shift,omitempty"`
	// Consumer and Position are a ToConsumer target's source consumer
	// and which of its positions is copied ("" = PositionAckFloor).
	Consumer string `json:"consumer,omitempty"`
	Position string `json:"position,omitempty"`
	// Snapshot names the snapshot a ToSaved target restores, if any.
	Snapshot string `json:"snapshot,omitempty"`
}

// Validate checks that the target is complete.
func (t Target) Validate() error {
	switch t.Kind {
	case ToTime:
		if t.Time.IsZero() {
			return jsutil.Errorf(jsutil.ErrBadInput, "a time target needs a time")
		}
	case ByDuration:
		if t.Duration <= 0 {
			return jsutil.Errorf(jsutil.ErrBadInput, "a duration target needs a positive duration")
		}
	case ToSeq:
		if t.Seq == 0 {
			return jsutil.Errorf(jsutil.ErrBadInput, "a sequence target needs a sequence of at least 1")
		}
	case ToConsumer:
		if t.Consumer == "" {
			return jsutil.Errorf(jsutil.ErrBadInput, "a consumer target needs the consumer whose position to copy")
		}
		switch t.Position {
		case "", PositionAckFloor, PositionDelivered:
		default:
			return jsutil.Errorf(jsutil.ErrBadInput, "unknown position %q: use %s or %s", t.Position, PositionAckFloor, PositionDelivered)
		}
	case ShiftBy, ToEarliest, ToLatest, ToAckFloor, ToPrevious, ToSaved:
	default:
		return jsutil.Errorf(jsutil.ErrBadInput, "unknown target kind %q", t.Kind)
	}
	switch t.Mode {
	case "", ModeAfter, ModeBefore, ModeNearest:
	default:
		return jsutil.Errorf(jsutil.ErrBadInput, "unknown mode %q: use after, before or nearest", t.Mode)
	}
	return nil
}

// String describes the target for people.
func (t Target) String() string {
	switch t.Kind {
	case ToTime:
		return fmt.Sprintf("time %s (%s)", t.Time.UTC().Format(time.RFC3339Nano), t.mode())
	case ByDuration:
		return fmt.Sprintf("%s ago", t.Duration)
	case ToSeq:
		return fmt.Sprintf("sequence %d", t.Seq)
	case ShiftBy:
		return fmt.Sprintf("shift by %+d", t.Shift)
	case ToSaved:
		if t.Snapshot != "" {
			return fmt.Sprintf("snapshot %s", t.Snapshot)
		}
		return "saved positions"
	case ToConsumer:
		return fmt.Sprintf("consumer %s's %s", t.Consumer, positionWords(t.position()))
	}
	return string(t.Kind)
}

// positionWords names a position for people.
func positionWords(p string) string {
	if p == PositionDelivered {
		return "delivered position"
	}
	return "ack floor"
}

// position is the source position a ToConsumer target copies.
func (t Target) position() string {
	if t.Position == "" {
		return PositionAckFloor
	}
	return t.Position
}

func (t Target) mode() string {
	if t.Mode == "" {
		return ModeAfter
	}
	return t.Mode
}

// SeekFunc finds the stream sequence a consumer reset to time t starts from
// (see jsutil/seek) and the time of the message there (zero when none).
type SeekFunc func(ctx context.Context, js jetstream.JetStream, stream string, t time.Time, mode, subject string) (uint64, time.Time, error)

// DefaultSeek is the SeekFunc built on jsutil/seek.
func DefaultSeek(ctx context.Context, js jetstream.JetStream, stream string, t time.Time, mode, subject string) (uint64, time.Time, error) {
	r, err := seek.Seek(ctx, js, stream, t, seek.Options{Mode: seek.Mode(mode), Subject: subject})
	if err != nil {
		return 0, time.Time{}, err
	}
	var mt time.Time
	if r.Message != nil {
		mt = r.Message.Time
	}
	return r.Sequence, mt, nil
}
