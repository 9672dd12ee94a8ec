package commands

import (
	"context"
	"time"

	"github.com/jsctl/jsctl/jsutil"
)

// PickCmd chooses a moment interactively and moves a consumer there.
type PickCmd struct {
	Stream   string `arg:"" optional:"" predictor:"stream" help:"Stream (default: choose from a list)."`
	Consumer string `arg:"" optional:"" predictor:"consumer" help:"Durable consumer (default: choose from a list)."`
	All      bool   `name:"all" help:"List every stream, also those holding KV buckets and object stores (KV_*, OBJ_*)."`
	pickFlags
	Method string `name:"method" enum:"auto,reset,recreate" default:"auto" predictor:"enum" help:"In place with the server's reset API, delete and recreate, or auto (${enum})."`
	Force  bool   `name:"force" help:"Move a busy consumer while clients read from it (prefer --pause), and accept moves that skip messages for good."`
	pauseFlags
	ForgetAcks bool   `name:"forget-acks" help:"Forget the ack records (jsctl consume) of the replayed range so the handler runs again."`
	AcksBucket string `name:"bucket" default:"JSCTL_ACKS" placeholder:"NAME" help:"Ack-record bucket (jsctl consume's records)."`
	AcksScope  string `name:"scope" placeholder:"NAME" predictor:"scope" help:"Ack-record scope (default STREAM.CONSUMER)."`
}

// pickFlags are the picker's own flags (pick, consumer reset -i, seek -i
// take the ones they need).
type pickFlags struct {
	At           string `name:"at" placeholder:"TIME" predictor:"time" help:"Put the cursor at TIME first (default: the consumer's next message, its ack floor + 1 within its filters)."`
	Mode         string `name:"mode" enum:"after,before,nearest" default:"after" predictor:"enum" help:"Which message the time selects, switched with m (${enum})."`
	Subject      string `name:"subject" placeholder:"FILTER" help:"Preview filter: look at the messages on FILTER (changed with f; default: the consumer's own filters)."`
	Since        string `name:"since" placeholder:"TIME" predictor:"time" help:"Start of the timeline strip (default: the first message)."`
	Until        string `name:"until" placeholder:"TIME" predictor:"time" help:"End of the timeline strip (default: the last message)."`
	ShowMessages int    `name:"show-messages" placeholder:"N" default:"10" help:"How many redelivered (or skipped) messages the review lists."`
}

// Help is the long help of pick.
func (PickCmd) Help() string {
	return `Chooses the moment to move a durable consumer to by looking at it: pick
the stream and the consumer from lists (type to filter, Enter), then move the
cursor and see the message there, its neighbours, and what a reset to it would
do; Enter reviews the plan (the table consumer reset prints and the messages
it redelivers), and y applies it like consumer reset --execute (intents,
verification, history). The cursor opens on the consumer's next message (its
ack floor + 1 within its filters). Leaving without applying (q, Esc, Ctrl-C)
changes nothing and exits 6. Needs a terminal on stdin and stdout (exit 2
otherwise; in a script use consumer reset STREAM CONSUMER --to-time T).

Keys: ←/→ one second, [ ] one minute, PgUp/PgDn one hour (to the whole
second, selecting the message there by the mode), ↑/↓ the previous or next
message exactly (within the filter), t type a time (any form jsctl accepts,
fraction kept), m after/before/nearest, f preview filter (look at other
subjects; a message the consumer does not receive is marked, and the plan
names the first one it does), Enter review, y apply, n/Esc back, q quit.
NO_COLOR turns colours off.

Examples:
  jsctl pick
  jsctl pick ORDERS billing --at "2026-11-29 10:00"
  jsctl pick ORDERS billing --pause
  jsctl consumer reset ORDERS billing -i
  jsctl seek ORDERS -i`
}

// Validate checks the flags.
func (c *PickCmd) Validate() error {
	if err := c.pauseFlags.validate(); err != nil {
		return err
	}
	return c.pickFlags.validate()
}

func (f pickFlags) validate() error {
	if f.ShowMessages < 1 || f.ShowMessages > 1000 {
		return jsutil.Errorf(jsutil.ErrBadInput, "--show-messages must be from 1 to 1000, got %d", f.ShowMessages)
	}
	if f.Subject != "" {
		return jsutil.CheckSubjectFilter("--subject", f.Subject)
	}
	return nil
}

// Run runs the picker for a reset.
func (c *PickCmd) Run(ctx context.Context, env *Env) error {
	r := &ConsumerResetCmd{
		Method: c.Method, Force: c.Force, pauseFlags: c.pauseFlags, ForgetAcks: c.ForgetAcks,
		AcksBucket: c.AcksBucket, AcksScope: c.AcksScope,
	}
	return runPickReset(ctx, env, pickRequest{stream: c.Stream, consumer: c.Consumer, flags: c.pickFlags, opts: r.options(env), all: c.All, what: "jsctl pick"})
}

// pickTimes reads --at, --since and --until.
func (f pickFlags) times(env *Env) (at, since, until time.Time, err error) {
	for _, x := range []struct {
		s string
		t *time.Time
	}{{f.At, &at}, {f.Since, &since}, {f.Until, &until}} {
		if x.s == "" {
			continue
		}
		if *x.t, err = env.ParseTime(x.s); err != nil {
			return
		}
	}
	return
}
