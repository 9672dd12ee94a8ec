package reset

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// ReadPlan decodes a plan written as JSON (see Plan).
func ReadPlan(data []byte) (*Plan, error) {
	var p Plan
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "read plan: %w", err)
	}
	if p.Stream == "" {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "read plan: no stream")
	}
	if why := nameProblem("stream", p.Stream); why != "" {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "read plan: its %s", why)
	}
	now := time.Now()
	if why := firstProblem(jsutil.RecordedTimePtrProblem("the stream's recorded creation time", p.StreamCreated, now),
		timeRangeProblem("its target time", timeOrNil(p.Target.Time))); why != "" {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "read plan: %s", why)
	}
	for i, c := range p.Changes {
		if c == nil || c.Consumer == "" || c.To.Sequence == 0 {
			return nil, jsutil.Errorf(jsutil.ErrBadInput, "read plan: change %d has no consumer or target sequence", i+1)
		}
		if c.Stream != p.Stream {
			return nil, jsutil.Errorf(jsutil.ErrBadInput, "read plan: change %d is for stream %q, not %q", i+1, c.Stream, p.Stream)
		}
		if why := planProblem(c, now); why != "" {
			return nil, jsutil.Errorf(jsutil.ErrBadInput, "read plan: change %d (consumer %q): %s", i+1, c.Consumer, why)
		}
	}
	return &p, nil
}

// Replan checks a saved plan against the server and returns a fresh plan
// with the same targets and methods. A consumer that has moved since the
// plan was made (its delivered or ack floor sequence differs) is refused
// with a jsutil.ErrConflict refusal, unless the move is its clients'
// progress under Options.Force or Options.Pause (see sincePlan).
func Replan(ctx context.Context, js jetstream.JetStream, saved *Plan, opts Options) (*Plan, error) {
	opts = opts.withDefaults()
	p, err := newPlanner(ctx, js, saved.Stream, opts)
	if err != nil {
		return nil, jsutil.Wrap(err, "reset consumers on %q", saved.Stream)
	}
	plan := &Plan{Created: opts.Now().UTC(), Stream: saved.Stream, Target: saved.Target, Changes: []*Change{}}
	plan.StreamCreated = p.streamCreated()
	recreated := p.streamCheck(saved.StreamCreated, "the plan was made")
	pending, bad, pendingErr := p.unfinished(ctx)
	seen := map[string]bool{}
	for _, s := range saved.Changes {
		if seen[s.Consumer] {
			continue // listed twice (by an older jsctl): changed once
		}
		seen[s.Consumer] = true
		c, err := p.newChange(ctx, s.Consumer)
		if s.Method == Create {
			// Made from a saved configuration: only while it is missing.
			if err == nil {
				c.refuse(jsutil.ErrConflict, "exists now; the plan was to create it")
				plan.Changes = append(plan.Changes, c)
				continue
			}
			if !errors.Is(err, jsutil.ErrNotFound) {
				return nil, err
			}
			cfg, cerr := rawOf(s.Config)
			if cerr != nil || len(cfg) == 0 {
				return nil, jsutil.Errorf(jsutil.ErrBadInput, "read plan: change for %q creates it but has no configuration", s.Consumer)
			}
			c = &Change{Stream: saved.Stream, Consumer: s.Consumer, UndoOf: s.UndoOf, Warnings: []string{}}
			if err := p.completeCreate(ctx, c, cfg, s.To.Sequence, s.Reason); err != nil {
				return nil, err
			}
			// The file's configuration is what is created: shown in full.
			c.noteConfigDiff(DefaultConfig, c.Config, true)
			refuseUnfinished(c, pending)
			plan.Changes = append(plan.Changes, c)
			continue
		}
		if err != nil {
			return nil, err
		}
		c.UndoOf, c.RestoreStart = s.UndoOf, s.RestoreStart
		if s.Source != nil {
			src := *s.Source
			src.Uncovered = 0 // counted again
			c.Source = &src
		}
		srcWhy, err := p.sourceCheck(ctx, s.Source)
		if err != nil {
			return nil, err
		}
		p.opts.Method = opts.Method
		asPlanned := opts.Method == Auto && (s.Method == Reset || s.Method == Recreate)
		if asPlanned {
			p.opts.Method = s.Method
		}
		if err := p.complete(ctx, c, saved.Target, s.To.Sequence); err != nil {
			return nil, err
		}
		if asPlanned && c.Method == s.Method && s.Reason != "" {
			c.Reason = s.Reason // the plan's own reason, not "--method reset"
		}
		if why := opts.sincePlan(s.From, c.From.Delivered, c.From.AckFloor); why != "" {
			c.refuse(jsutil.ErrConflict, "%s; plan again", why)
		} else if c.From.Delivered != s.From.Delivered || c.From.AckFloor != s.From.AckFloor {
			c.warn("a client moved it on since the plan was made (delivered %d, ack floor %d; the plan saw %d and %d); the target stays %d as planned",
				c.From.Delivered, c.From.AckFloor, s.From.Delivered, s.From.AckFloor, c.To.Sequence)
		}
		if why := consumerCheck(s, c.state); why != nil {
			c.refuseWith(why, "; plan again")
		}
		if srcWhy != nil {
			c.refuseWith(srcWhy, ": its position is the one this change's target was copied from; plan again")
		}
		refuseUnfinished(c, pending)
		plan.Changes = append(plan.Changes, c)
	}
	for _, c := range plan.Changes {
		if recreated != nil {
			// Another stream: whatever else was found about it is moot.
			c.Refused, c.refusal = "", nil
			c.refuseWith(recreated, ": the plan's sequences name other messages now; plan again")
		} else if saved.StreamCreated == nil {
			c.warn("the plan does not record when stream %q was created (made by an older jsctl): not checked that it is still the stream planned for", saved.Stream)
		}
	}
	plan.noteUnfinished(pending, bad, pendingErr)
	return plan, nil
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// sourceCheck compares the consumer a saved --to-consumer change copied
// its target from with that consumer now: the refusal (a
// *jsutil.Recreated) when it was deleted and created again since the plan
// was made (its position then said nothing about the one of that name
// now), nil when it is the same, the plan does not say (an older jsctl),
// or it is gone (the target stays as planned); and the error of reading
// it.
func (p *planner) sourceCheck(ctx context.Context, s *Source) (refusal, err error) {
	if s == nil || s.Created == nil {
		return nil, nil
	}
	stream := p.info.Config.Name
	st, err := loadConsumer(ctx, p.js, stream, s.Consumer)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, jsutil.Wrap(err, "read consumer %q on %q, whose position the plan copies", s.Consumer, stream)
	}
	return jsutil.RecordedConsumer(stream, s.Consumer, s.Created).Check(st.identity(), "the plan was made"), nil
}
