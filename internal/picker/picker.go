// Package picker is jsctl's terminal UI for choosing a moment in a stream
// by looking at it (jsctl pick, consumer reset --interactive, seek
// --interactive): the operator chooses a stream and a durable consumer,
// moves a cursor through the stream, sees the message there and what a
// reset to it would do, and then finishes.
//
// The cursor is a message as well as a time. ←/→, [/] and PgUp/PgDn move
// the time to a whole second and select the message there by the mode
// (after, before, nearest), as jsctl seek does; ↑/↓ step exactly one
// message within the filter in force, and the time shown becomes that
// message's own; a typed time (t) is kept with its fraction. The filter in
// force is the preview filter (f, --subject) when one is set, else the
// consumer's own filters (all subjects for seek -i).
//
// What y applies is the message shown as Sequence: the plan is a reset to
// the first message at or after it that the consumer receives, which is
// that message itself unless it lies outside the consumer's filters (the
// screen then says so and names the message the consumer will get).
//
// The model is a bubbletea model with no terminal of its own: every answer
// comes from a Source (JetStreamSource implements it over jsutil/seek and
// jsutil/reset), so Update and View are tested as pure functions. Lookups
// are debounced and their answers cached; while one is awaited a spinner
// and its age show, with the last answer left on screen. Nothing else may
// write to the terminal while the picker runs: what jsctl would say on
// stderr (a request asked again, a warning) reaches the status line as a
// Notice and is gone when the server answers.
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
	// ForReset picks a stream, a consumer and a message, reviews the reset
	// plan and finishes with y (jsctl pick, consumer reset -i).
	ForReset Kind = iota
	// ForSeek picks a message in a stream and finishes with Enter (seek -i).
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
	// Filters are the consumer's filter subjects (none: all subjects).
	Filters []string
}

// Source answers the picker's questions. Each call may block on the
// server; the model runs them outside Update. subjects is a set of filter
// subjects a message may match any of (none: all subjects).
type Source interface {
	Streams(ctx context.Context) ([]StreamRow, error)
	Consumers(ctx context.Context, stream string) ([]ConsumerRow, error)
	// Seek answers what `jsctl seek STREAM T --mode M --around N` does
	// within subjects.
	Seek(ctx context.Context, stream string, t time.Time, mode seek.Mode, subjects []string, around int) (*seek.Result, error)
	// At answers for a position rather than a time: the first message at
	// or after seq within subjects (Sequence: its sequence, or the
	// stream's last sequence + 1 when there is none) with around
	// neighbours on each side, as seek.At does.
	At(ctx context.Context, stream string, seq uint64, subjects []string, around int) (*seek.Result, error)
	Timeline(ctx context.Context, stream string, subjects []string, buckets int) (*seek.TimelineResult, error)
	// Plan is the plan of `jsctl consumer reset STREAM CONSUMER --to-seq
	// SEQ`, with up to show messages listed per change.
	Plan(ctx context.Context, stream, consumer string, seq uint64, show int) (*reset.Plan, error)
	// ParseTime reads a time the user typed, in any form jsctl accepts.
	ParseTime(s string) (time.Time, error)
}

// Config sets the picker up.
type Config struct {
	Kind     Kind
	Stream   string // "" = choose from a list
	Consumer string // "" = choose from a list (ForReset)
	// Preview is the preview filter ("" = none: the consumer's own
	// filters, or all subjects for ForSeek).
	Preview string
	Mode    seek.Mode
	// Start is the first cursor time (zero: the consumer's next message,
	// its ack floor + 1 within its filters; for ForSeek the last message).
	Start time.Time
	Loc   *time.Location
	// Color allows colours (off under NO_COLOR).
	Color bool
	// Debounce is how long the cursor rests before it is looked up
	// (default 25ms); answers already cached show at once.
	Debounce time.Duration
	// ShowMessages is how many redelivered or skipped messages the review
	// lists (default 10).
	ShowMessages int
	// RenderPlan renders a plan as consumer reset prints it, fitted to
	// width columns (no column dropped).
	RenderPlan func(p *reset.Plan, width int) string
	// AllStreams lists the streams that hold KV buckets and object stores
	// (KV_*, OBJ_*) too; they are hidden otherwise.
	AllStreams bool
	// Now is the clock the ages of waits are told by (default time.Now).
	Now func() time.Time
}

// Outcome is how the picker ended.
type Outcome struct {
	// Done is set when the user finished (seek: Enter; reset: y on the
	// review); otherwise they left and nothing is to change.
	Done             bool
	Stream, Consumer string
	// Time is, for ForSeek, the time to seek: the chosen message's own
	// (exact), or the cursor's time when no message is selected.
	Time time.Time
	Mode seek.Mode
	// Preview is the preview filter in force at the end ("" = none).
	Preview string
	// Plan is the reviewed plan to execute (ForReset).
	Plan *reset.Plan
}

// Notice is a line for the status line from outside the model: what jsctl
// would otherwise write on stderr while the picker owns the terminal (a
// request asked again, a warning). It stays until the next answer from
// the server; send it with tea.Program.Send.
type Notice struct{ Text string }

// TimelineProgress reports how far the strip's timeline has been read;
// send it with tea.Program.Send from the Source's progress callback.
type TimelineProgress struct{ Done, Total int }
