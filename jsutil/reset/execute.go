package reset

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// Execute applies a plan: each change is made, verified from consumer info
// and recorded in history. Nothing is changed when the plan has a refusal
// (Plan.Err). Execution stops at the first change that fails; the error
// names the consumer, and the change's Error and Restored fields say what
// happened.
func Execute(ctx context.Context, js jetstream.JetStream, plan *Plan, opts Options) error {
	opts = opts.withDefaults()
	if err := plan.Err(); err != nil {
		return err
	}
	if len(plan.Changes) == 0 {
		plan.Executed = true
		return nil
	}
	p, err := newPlanner(ctx, js, plan.Stream, opts)
	if err != nil {
		return jsutil.Wrap(err, "reset consumers on %q", plan.Stream)
	}
	plan.Executed = true
	lacksAPI := false
	for _, c := range plan.Changes {
		if err := p.executeOne(ctx, plan, c, &lacksAPI); err != nil {
			c.Error = err.Error()
			return err
		}
	}
	return nil
}

func (p *planner) executeOne(ctx context.Context, plan *Plan, c *Change, lacksAPI *bool) error {
	if c.state == nil {
		st, err := loadConsumer(ctx, p.js, c.Stream, c.Consumer)
		if err != nil {
			return wrapConsumer(err, c.Stream, c.Consumer)
		}
		c.state = st
	}
	if err := p.forgetAcks(ctx, c); err != nil {
		return err
	}
	if c.Method == Reset && *lacksAPI && p.opts.Method == Auto {
		c.Method = Recreate
		c.Reason = "the server has no consumer reset API"
	}
	if c.Method == Reset {
		seq := c.To.Sequence
		if seq == c.From.AckFloor+1 {
			seq = 0 // the server's own "back to the ack floor", allowed for every policy
		}
		err := p.resetWithRetry(ctx, c, seq)
		switch {
		case err == nil:
		case p.opts.Method == Auto && lacksResetAPI(err):
			*lacksAPI = true
			c.Method = Recreate
			c.Reason = fmt.Sprintf("the server has no consumer reset API (%v)", err)
		case p.opts.Method == Auto && errors.Is(err, jetstream.ErrConsumerInvalidReset):
			c.Method = Recreate
			c.Reason = "the server refused an in-place reset to this sequence"
		default:
			return wrapConsumer(err, c.Stream, c.Consumer)
		}
	}
	if c.Method == Recreate {
		if err := p.recreate(ctx, c); err != nil {
			return err
		}
	}
	c.Applied = true
	c.Verified = p.verify(ctx, c)
	_, err := record(ctx, p.js, p.opts.HistoryBucket, p.info.Config.Replicas, Record{
		Stream: c.Stream, Consumer: c.Consumer, Time: p.opts.Now().UTC(), Method: c.Method,
		Target: plan.Target, From: c.From, To: c.To, Verified: c.Verified, UndoOf: c.UndoOf,
		FromStart: startOf(c.state.info.Config),
		User:      p.opts.User, Host: p.opts.Host,
	})
	if err != nil {
		c.warn("the reset was made but not recorded in history: %v", err)
	}
	return nil
}

// recreate deletes the consumer and creates it again with its configuration
// starting at the target. A failure after the delete puts the consumer
// back at its old position.
func (p *planner) recreate(ctx context.Context, c *Change) error {
	st, err := loadConsumer(ctx, p.js, c.Stream, c.Consumer)
	if err != nil {
		return wrapConsumer(err, c.Stream, c.Consumer)
	}
	oldCfg := st.raw.withoutServerMetadata()
	var start time.Time
	if c.StartTime != nil {
		start = *c.StartTime
	}
	newCfg := oldCfg.withStart(c.To.Sequence, start)
	if c.RestoreStart != nil {
		newCfg = oldCfg.withStartConfig(*c.RestoreStart)
	}

	// Permission check before anything is deleted: creating the consumer
	// with its own configuration is a no-op the server must authorise.
	if _, err := createConsumer(ctx, p.js, c.Stream, c.Consumer, st.raw); err != nil && !consumerExists(err) {
		return jsutil.Wrap(err, "reset consumer %q on %q: check before delete (nothing changed)", c.Consumer, c.Stream)
	}

	// On an interest stream, deleting the only interested consumer removes
	// its messages: a short-lived holder keeps interest meanwhile.
	if p.info.Config.Retention == jetstream.InterestPolicy {
		holdFrom := min(c.To.Sequence, c.From.AckFloor+1)
		release, err := p.hold(ctx, c, holdFrom)
		if err != nil {
			return jsutil.Wrap(err, "reset consumer %q on %q: keep interest during the recreate (nothing changed)", c.Consumer, c.Stream)
		}
		defer release()
	}

	if err := deleteConsumer(ctx, p.js, c.Stream, c.Consumer); err != nil {
		return wrapConsumer(err, c.Stream, c.Consumer)
	}
	err = nil
	if p.opts.beforeCreate != nil {
		err = p.opts.beforeCreate()
	}
	if err == nil {
		_, err = createConsumer(ctx, p.js, c.Stream, c.Consumer, newCfg)
	}
	if err == nil && c.RestoreStart != nil {
		err = p.moveRestored(ctx, c, oldCfg)
	}
	if err == nil {
		return nil
	}
	cause := jsutil.Wrap(err, "reset consumer %q on %q: recreate failed", c.Consumer, c.Stream)
	if rerr := p.restore(context.WithoutCancel(ctx), c, oldCfg); rerr != nil {
		return fmt.Errorf("%w; restoring it also failed, the consumer is gone: %v", cause, rerr)
	}
	c.Restored = true
	return fmt.Errorf("%w; restored it at its old position (next delivery %d)", cause, c.From.AckFloor+1)
}

// moveRestored moves a consumer recreated with its original start to the
// target in place; where that fails it starts it by sequence instead.
func (p *planner) moveRestored(ctx context.Context, c *Change, oldCfg rawConfig) error {
	if err := p.resetWithRetry(ctx, c, c.To.Sequence); err == nil {
		return nil
	}
	c.warn("could not move the consumer with its original deliver policy %s; it starts by sequence instead", c.RestoreStart.DeliverPolicy)
	if err := deleteConsumer(ctx, p.js, c.Stream, c.Consumer); err != nil {
		return err
	}
	_, err := createConsumer(ctx, p.js, c.Stream, c.Consumer, oldCfg.withStart(c.To.Sequence, time.Time{}))
	return err
}

// restore creates the consumer again with its old configuration and moves
// it back to its old ack floor.
func (p *planner) restore(ctx context.Context, c *Change, oldCfg rawConfig) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	next := c.From.AckFloor + 1
	if _, err := createConsumer(ctx, p.js, c.Stream, c.Consumer, oldCfg); err != nil {
		return err
	}
	if err := resetInPlace(ctx, p.js, c.Stream, c.Consumer, next); err == nil {
		return nil
	}
	// The old deliver policy does not allow it in place: start by sequence.
	if err := deleteConsumer(ctx, p.js, c.Stream, c.Consumer); err != nil {
		return err
	}
	_, err := createConsumer(ctx, p.js, c.Stream, c.Consumer, oldCfg.withStart(next, time.Time{}))
	return err
}

// hold creates a consumer that keeps interest in the stream's messages from
// seq on, and returns a function that deletes it.
func (p *planner) hold(ctx context.Context, c *Change, seq uint64) (func(), error) {
	cfg := jetstream.ConsumerConfig{
		Name:              fmt.Sprintf("jsctl_hold_%d", p.opts.Now().UnixNano()),
		Description:       fmt.Sprintf("jsctl: keeps interest while consumer %q is recreated", c.Consumer),
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       max(seq, 1),
		AckPolicy:         jetstream.AckExplicitPolicy,
		InactiveThreshold: 5 * time.Minute,
	}
	if len(c.Filters) == 1 {
		cfg.FilterSubject = c.Filters[0]
	} else {
		cfg.FilterSubjects = c.Filters
	}
	cons, err := p.stream.CreateConsumer(ctx, cfg)
	if err != nil {
		return nil, err
	}
	name := cons.CachedInfo().Name
	return func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = p.stream.DeleteConsumer(dctx, name)
	}, nil
}

func consumerExists(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) &&
		(apiErr.ErrorCode == jetstream.JSErrCodeConsumerExists || apiErr.ErrorCode == jetstream.JSErrCodeConsumerNameExists)
}

// verify reads the consumer's info (polling briefly, as a replicated
// consumer's info may lag) and checks that the next delivery is the target.
func (p *planner) verify(ctx context.Context, c *Change) bool {
	want := c.To.Sequence - 1
	lower := want
	if c.Method == Recreate && c.StartTime != nil {
		// The server starts a by-time consumer at the first message at or
		// after the time on any subject; the first one it delivers is the
		// target.
		if s, _, err := p.opts.Seek(ctx, p.js, c.Stream, *c.StartTime, ModeAfter, ""); err == nil && s > 0 {
			lower = min(s-1, want)
		}
	}
	var got *jetstream.ConsumerInfo
	deadline := time.Now().Add(3 * time.Second)
	for {
		st, err := loadConsumer(ctx, p.js, c.Stream, c.Consumer)
		if err == nil {
			got = st.info
			d, a := got.Delivered.Stream, got.AckFloor.Stream
			// A recreated replicated consumer may report an ack floor of
			// 0 until something is acknowledged: nothing is pending then.
			fresh := c.Method == Recreate && a == 0 && got.AckFloor.Consumer == 0 && got.NumAckPending == 0
			if (d == a || fresh) && d >= lower && d <= want {
				return true
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got != nil {
		c.warn("not verified: consumer info shows delivered %d and ack floor %d, expected %d", got.Delivered.Stream, got.AckFloor.Stream, want)
	} else {
		c.warn("not verified: consumer info could not be read")
	}
	return false
}

// resetWithRetry calls the reset API. A replicated consumer does not answer
// while it elects a leader, so an unanswered request is retried (twice)
// once the consumer has a leader again; a single server that does not
// answer lacks the API.
func (p *planner) resetWithRetry(ctx context.Context, c *Change, seq uint64) error {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		actx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
		err = p.opts.inPlace(actx, p.js, c.Stream, c.Consumer, seq)
		cancel()
		if err == nil || ctx.Err() != nil || !(lacksResetAPI(err) || unavailable(err)) {
			return err
		}
		if !p.waitLeader(ctx, c) {
			return err
		}
	}
	return err
}

// waitLeader polls the consumer's info (at most 10s) until it reports a
// leader; it returns false at once for a consumer that is not replicated.
func (p *planner) waitLeader(ctx context.Context, c *Change) bool {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		st, err := loadConsumer(ctx, p.js, c.Stream, c.Consumer)
		if err == nil {
			cl := st.info.Cluster
			if cl == nil || len(cl.Replicas) == 0 {
				return false
			}
			if cl.Leader != "" {
				return true
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// unavailable reports a 503 reply: the request was not applied.
func unavailable(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.Code == 503
}
