// Package picker is jsctl's terminal UI for choosing a moment in a stream
// by looking at it (jsctl pick, consumer reset --interactive, seek
// --interactive): the operator chooses a stream and a durable consumer,
// moves a time cursor to the second, sees the message there and what a
// reset to it would do, and then finishes.
//
// The model is a bubbletea model with no terminal of its own: every answer
// comes from a Source (commands implements it over jsutil/seek and
// jsutil/reset), so Update and View are tested as pure functions. Cursor
// moves are debounced and their answers cached, and a spinner shows while
// an answer is awaited, with the last answer left on screen.
package picker

import (
	"context"
	"time"

	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/jsctl/jsctl/jsutil/seek"
)

// Kind says what the picker is for.
type Kind int

// Kinds.
const (
	// ForReset picks a stream, a consumer and a time, reviews the reset
	// plan and finishes with y (jsctl pick, consumer reset -i).
	ForReset Kind = iota
	// ForSeek picks a time in a stream and finishes with Enter (seek -i).
	ForSeek
)

// StreamRow is a stream in the choose list.
type StreamRow struct {
	Name        string
	Messages    uint64
	First, Last time.Time // zero when empty
}

// ConsumerRow is a durable consumer in the choose list and the pick
// screen's header.
type ConsumerRow struct {
	Name                string
	Delivered, AckFloor uint64
	AckFloorTime        *time.Time
	Pending             uint64
	Paused              bool
	Filters             []string
}

// Source answers the picker's questions. Each call may block on the
// server; the model runs them outside Update.
type Source interface {
	Streams(ctx context.Context) ([]StreamRow, error)
	Consumers(ctx context.Context, stream string) ([]ConsumerRow, error)
	// Seek answers what `jsctl seek STREAM T --mode M --subject S` does,
	// with neighbours.
	Seek(ctx context.Context, stream string, t time.Time, mode seek.Mode, subject string) (*seek.Result, error)
	Timeline(ctx context.Context, stream, subject string, buckets int) (*seek.TimelineResult, error)
	// Plan is the plan of `jsctl consumer reset STREAM CONSUMER --to-time
	// T --mode M`, with up to show messages listed per change.
	Plan(ctx context.Context, stream, consumer string, t time.Time, mode seek.Mode, show int) (*reset.Plan, error)
	// ParseTime reads a time the user typed, in any form jsctl accepts.
	ParseTime(s string) (time.Time, error)
}

// Config sets the picker up.
type Config struct {
	Kind     Kind
	Stream   string // "" = choose from a list
	Consumer string // "" = choose from a list (ForReset)
	Subject  string // preview filter ("" = the consumer's single filter, or all)
	Mode     seek.Mode
	Start    time.Time // the first cursor time (zero: the ack floor's, else the last message's)
	Loc      *time.Location
	// Color allows colours (off under NO_COLOR).
	Color bool
	// Debounce is how long the cursor rests before it is looked up
	// (default 25ms); answers already cached show at once.
	Debounce time.Duration
	// ShowMessages is how many redelivered or skipped messages the review
	// lists (default 10).
	ShowMessages int
	// RenderPlan renders a plan as consumer reset prints it.
	RenderPlan func(*reset.Plan) string
	// Buckets is the timeline strip's number of buckets (default 50).
	Buckets int
}

// Outcome is how the picker ended.
type Outcome struct {
	// Done is set when the user finished (seek: Enter; reset: y on the
	// review); otherwise they left and nothing is to change.
	Done             bool
	Stream, Consumer string
	Time             time.Time
	Mode             seek.Mode
	Subject          string
	// Plan is the reviewed plan to execute (ForReset).
	Plan *reset.Plan
}
