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

// Move says where one consumer should be: its next delivery Seq. A consumer
// that exists is moved there as NewPlan moves it. One that does not exist is
// created from Config, its configuration exactly as the server once
// returned it (from history or a snapshot).
type Move struct {
	Consumer string          `json:"consumer"`
	Seq      uint64          `json:"sequence"`
	Config   json.RawMessage `json:"config,omitempty"`
	// From says where Config comes from, for the plan's reason
	// (e.g. `snapshot "before-deploy"`).
	From string `json:"from,omitempty"`
	// StreamCreated is when the stream that Seq is a sequence of was
	// created, and FloorTime the saved time of the message before Seq (the
	// ack floor): a stream created again since is refused, or with
	// Options.ByTime the position is found by FloorTime (see moveSeq).
	StreamCreated *time.Time `json:"stream_created,omitempty"`
	FloorTime     *time.Time `json:"floor_time,omitempty"`
	// FloorTimeUnknown says FloorTime could not be read when the position
	// was saved (a refused or unanswered read): Options.ByTime refuses
	// the move rather than take it for a position without a time.
	FloorTimeUnknown bool `json:"floor_time_unknown,omitempty"`
	// Created is when the consumer whose position was saved was created:
	// one of that name created at another time since is another consumer,
	// moved all the same (its name is what the position was saved under)
	// with a warning naming both creation times.
	Created *time.Time `json:"created,omitempty"`
}

// PlanMoves plans moving each consumer of stream to its own sequence,
// creating those that do not exist from their saved configuration. Nothing
// changes on the server; Execute applies the plan like any other (intent
// record, verification from the server's reply, history), and a created
// consumer keeps the saved deliver policy where the server can then move
// it in place (else it starts by sequence, with a warning).
func PlanMoves(ctx context.Context, js jetstream.JetStream, stream string, moves []Move, opts Options) (*Plan, error) {
	opts = opts.withDefaults()
	p, err := newPlanner(ctx, js, stream, opts)
	if err != nil {
		return nil, jsutil.Wrap(err, "reset consumers on %q", stream)
	}
	target := Target{Kind: ToSaved}
	plan := &Plan{Created: opts.Now().UTC(), Stream: stream, Target: target, Skipped: []string{}}
	plan.StreamCreated = p.streamCreated()
	pending, bad, pendingErr := p.unfinished(ctx)
	plan.Changes = make([]*Change, len(moves))
	err = p.each(ctx, len(moves), func(i int) error {
		m := moves[i]
		if m.Seq == 0 {
			return jsutil.Errorf(jsutil.ErrBadInput, "move consumer %q on %q: no target sequence", m.Consumer, stream)
		}
		c, err := p.newChange(ctx, m.Consumer)
		switch {
		case errors.Is(err, jsutil.ErrNotFound) && len(m.Config) > 0:
			cfg, cerr := rawOf(m.Config)
			if cerr != nil {
				return jsutil.Errorf(jsutil.ErrBadInput, "move consumer %q on %q: read its saved configuration: %w", m.Consumer, stream, cerr)
			}
			from := m.From
			if from == "" {
				from = "its saved configuration"
			}
			c = &Change{Stream: stream, Consumer: m.Consumer, Warnings: []string{}}
			seq, refusal := p.moveSeq(ctx, c, m)
			err = p.completeCreate(ctx, c, cfg, seq, "the consumer does not exist: create it from "+from)
			if err == nil {
				c.noteConfigDiff(DefaultConfig, m.Config, true)
				p.noteMove(c, m, refusal)
			}
		case err == nil:
			seq, refusal := p.moveSeq(ctx, c, m)
			err = p.complete(ctx, c, target, seq)
			if cfg, cerr := rawOf(m.Config); err == nil && cerr == nil && len(m.Config) > 0 && !sameExceptStart(c.state.raw, cfg) {
				c.warn("its configuration differs from the saved one; only its position is changed")
				c.noteConfigDiff(c.state.raw.json(), m.Config, false)
			}
			if err == nil {
				p.noteMove(c, m, refusal)
				if why := jsutil.RecordedConsumer(stream, m.Consumer, m.Created).Check(c.state.identity(), "the position was saved"); why != nil {
					c.warn("%v: it is moved to the saved position all the same, keeping its own configuration", why)
				}
			}
		}
		if err != nil {
			return err
		}
		refuseUnfinished(c, pending)
		plan.Changes[i] = c
		return nil
	})
	if err != nil {
		return nil, err
	}
	plan.noteUnfinished(pending, bad, pendingErr)
	return plan, nil
}

// planRebuild plans --to-previous for a consumer that does not exist: it is
// created from the configuration its last history record keeps, at the
// position it had before that change.
func (p *planner) planRebuild(ctx context.Context, name string) (*Change, error) {
	stream := p.info.Config.Name
	rec, err := Last(ctx, p.js, p.opts.HistoryBucket, stream, name)
	if errors.Is(err, jsutil.ErrNotFound) {
		return nil, jsutil.Errorf(jsutil.ErrNotFound, "reset consumer %q on %q: consumer not found, and its history holds nothing to rebuild it from", name, stream)
	}
	if err != nil {
		return nil, err
	}
	if rec.Method == Create {
		// Rebuilding it at its position before the create (none) would
		// replay the whole stream: undoing a create leaves no consumer.
		return nil, jsutil.Errorf(jsutil.ErrNotFound, "reset consumer %q on %q: consumer not found, and its last recorded change (history revision %d) created it: without that change it does not exist, as now; to make it again, restore it from a snapshot", name, stream, rec.Revision)
	}
	if len(rec.Config) == 0 {
		return nil, jsutil.Errorf(jsutil.ErrNotFound, "reset consumer %q on %q: consumer not found, and its last history record (revision %d, written by an older jsctl) has no configuration to rebuild it from", name, stream, rec.Revision)
	}
	cfg, err := rawOf(rec.Config)
	if err != nil {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "reset consumer %q on %q: read the configuration in history revision %d: %w", name, stream, rec.Revision, err)
	}
	c := &Change{Stream: stream, Consumer: name, UndoOf: rec.Revision, Warnings: []string{}}
	why := fmt.Sprintf("the consumer does not exist: create it from the configuration in history revision %d, at its position before that change", rec.Revision)
	if err := p.completeCreate(ctx, c, cfg, rec.From.AckFloor+1, why); err != nil {
		return nil, err
	}
	// What the history record holds is what is created: shown in full.
	c.noteConfigDiff(DefaultConfig, c.Config, true)
	p.checkHistory(c, rec, nil)
	return c, nil
}

// completeCreate fills in a Create change: the consumer is made from cfg
// and moved to seq.
func (p *planner) completeCreate(ctx context.Context, c *Change, cfg rawConfig, seq uint64, why string) error {
	cfg = cfg.withoutServerMetadata()
	typed, err := cfg.typed()
	if err != nil {
		return jsutil.Errorf(jsutil.ErrBadInput, "create consumer %q on %q: read its configuration: %w", c.Consumer, c.Stream, err)
	}
	if n := typed.Name; n != "" && n != c.Consumer || typed.Durable != "" && typed.Durable != c.Consumer {
		return jsutil.Errorf(jsutil.ErrBadInput, "create consumer %q on %q: the saved configuration is for consumer %q", c.Consumer, c.Stream, typed.Name)
	}
	c.Method, c.Reason = Create, why
	// A consumer made anew has no position to redeliver from or skip
	// past: both counts are known, and zero.
	zero := uint64(0)
	c.Redeliver, c.Skip, c.NeverDelivered = &zero, &zero, &zero
	c.Config = cfg.json()
	c.DeliverPolicy = typed.DeliverPolicy.String()
	c.Push = typed.DeliverSubject != ""
	c.Filters = filters(typed)
	c.To.Sequence = p.clamp(c, seq)
	p.timeOf(ctx, c, &c.To.Time, c.To.Sequence, "target")
	ok, reason, err := p.startAllows(ctx, c, typed, c.To.Sequence)
	if err != nil {
		return err
	}
	if !ok {
		c.warn("its deliver policy cannot start there (%s): it is created starting by sequence %d", reason, c.To.Sequence)
	}
	return p.countAcks(ctx, c)
}

// createIntent is what a Create change makes: its saved configuration,
// then moved in place, or started by sequence where its policy does not
// allow that.
func (p *planner) createIntent(ctx context.Context, c *Change, in *Intent) error {
	cfg, err := rawOf(c.Config)
	if err != nil {
		return jsutil.Errorf(jsutil.ErrBadInput, "create consumer %q on %q: read its configuration: %w", c.Consumer, c.Stream, err)
	}
	typed, err := cfg.typed()
	if err != nil {
		return jsutil.Errorf(jsutil.ErrBadInput, "create consumer %q on %q: read its configuration: %w", c.Consumer, c.Stream, err)
	}
	in.Config = cfg.json()
	ok, _, err := p.startAllows(ctx, c, typed, c.To.Sequence)
	if err != nil {
		return err
	}
	if ok {
		in.NewConfig, in.MoveAfterCreate = cfg.json(), true
	} else {
		in.NewConfig = cfg.withStart(c.To.Sequence, time.Time{}).json()
	}
	return nil
}
