package reset

import (
	"context"
	"fmt"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// chooseMethod decides how to move the consumer and says why.
func (p *planner) chooseMethod(ctx context.Context, c *Change) error {
	if err := p.checkRestore(ctx, c); err != nil {
		return err
	}
	if c.RestoreStart != nil {
		c.Method = Recreate
		c.Reason = fmt.Sprintf("undo of a recreate: recreate with the original deliver policy %s, then reset in place", c.RestoreStart.DeliverPolicy)
		return nil
	}
	ok, why, err := p.inPlaceAllowed(ctx, c)
	if err != nil {
		return err
	}
	switch p.opts.Method {
	case Reset:
		c.Method = Reset
		c.Reason = "--method reset"
		if !ok {
			c.refuse(jsutil.ErrConflict, "the server cannot reset it in place: %s", why)
		}
	case Recreate:
		c.Method, c.Reason = Recreate, "--method recreate"
		if p.info.Config.Retention == jetstream.WorkQueuePolicy {
			c.refuse(jsutil.ErrConflict, "a work-queue stream takes only consumers with deliver policy all, so a recreate cannot start it at sequence %d (the server would refuse the create after the delete); use --method reset or auto, which move it in place", c.To.Sequence)
		}
	default:
		if ok {
			c.Method, c.Reason = Reset, why
		} else {
			c.Method, c.Reason = Recreate, why
		}
	}
	return nil
}

// checkRestore keeps RestoreStart only where the original start allows an
// in-place reset to the target (and the method is not forced to reset).
func (p *planner) checkRestore(ctx context.Context, c *Change) error {
	st := c.RestoreStart
	if st == nil {
		return nil
	}
	ok := false
	if why, no := p.noResetAPI(); no {
		c.RestoreStart = nil
		c.warn("the original deliver policy %s cannot be restored: %s; the consumer keeps its current start", st.DeliverPolicy, why)
		return nil
	}
	switch st.DeliverPolicy {
	case jetstream.DeliverAllPolicy.String():
		ok = true
	case jetstream.DeliverByStartSequencePolicy.String():
		ok = st.OptStartSeq <= c.To.Sequence
	case jetstream.DeliverByStartTimePolicy.String():
		if st.OptStartTime != nil {
			start, _, err := p.opts.Seek(ctx, p.js, c.Stream, *st.OptStartTime, ModeAfter, "")
			if err != nil {
				return wrapConsumer(err, c.Stream, c.Consumer)
			}
			ok = start <= c.To.Sequence
		}
	}
	if !ok || p.opts.Method == Reset {
		c.RestoreStart = nil
		if !ok {
			c.warn("the original deliver policy %s cannot start at %d; the consumer keeps its current start", st.DeliverPolicy, c.To.Sequence)
		}
	}
	return nil
}

// inPlaceAllowed applies the server's rule for the consumer reset API
// (server/consumer.go resetStartingSeqLocked).
func (p *planner) inPlaceAllowed(ctx context.Context, c *Change) (bool, string, error) {
	if why, no := p.noResetAPI(); no {
		return false, why, nil
	}
	seq := c.To.Sequence
	if seq == c.From.AckFloor+1 {
		return true, "in place: back to the ack floor is allowed for every deliver policy", nil
	}
	return p.startAllows(ctx, c, c.state.info.Config, seq)
}

// startAllows says whether a consumer with configuration cfg may be reset
// in place to seq (not counting the ack floor, always allowed) and why.
func (p *planner) startAllows(ctx context.Context, c *Change, cfg jetstream.ConsumerConfig, seq uint64) (bool, string, error) {
	if why, no := p.noResetAPI(); no {
		return false, why, nil
	}
	switch cfg.DeliverPolicy {
	case jetstream.DeliverAllPolicy:
		return true, "in place: deliver policy all allows any sequence", nil
	case jetstream.DeliverByStartSequencePolicy:
		if seq < cfg.OptStartSeq {
			return false, fmt.Sprintf("sequence %d is below the configured start sequence %d", seq, cfg.OptStartSeq), nil
		}
		return true, fmt.Sprintf("in place: at or above the configured start sequence %d", cfg.OptStartSeq), nil
	case jetstream.DeliverByStartTimePolicy:
		if cfg.OptStartTime == nil {
			return false, "the consumer has no start time", nil
		}
		start, _, err := p.opts.Seek(ctx, p.js, c.Stream, *cfg.OptStartTime, ModeAfter, "")
		if err != nil {
			return false, "", wrapConsumer(err, c.Stream, c.Consumer)
		}
		if seq < start {
			return false, fmt.Sprintf("sequence %d is below the configured start time's sequence %d", seq, start), nil
		}
		return true, fmt.Sprintf("in place: at or above the configured start time's sequence %d", start), nil
	}
	return false, fmt.Sprintf("deliver policy %s allows an in-place reset only to the ack floor", cfg.DeliverPolicy), nil
}

// noResetAPI reports a server that announced a version without the
// consumer reset API (before 2.14), and says so: a single such server
// answers the reset subject with nothing at all, so a change that counted
// on it would wait out its whole budget. Every move is then a recreate.
func (p *planner) noResetAPI() (string, bool) {
	v, old := jsutil.ServerBefore(p.js, jsutil.ResetAPISince)
	if !old {
		return "", false
	}
	return fmt.Sprintf("the server (nats-server %s) has no consumer reset API (nats-server %s or later)", v, jsutil.ResetAPISince), true
}
