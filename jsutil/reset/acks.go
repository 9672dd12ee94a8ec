package reset

import (
	"context"
	"errors"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/acks"
)

// ackStore opens the ack-record bucket once per plan; a missing bucket is
// nil (no records).
func (p *planner) ackStore(ctx context.Context) (*acks.Store, error) {
	p.acksOnce.Do(func() {
		bucket := p.opts.AcksBucket
		if bucket == "" {
			bucket = acks.DefaultBucket
		}
		s, err := acks.OpenExisting(ctx, p.js, bucket)
		if errors.Is(err, jsutil.ErrNotFound) {
			s, err = nil, nil
		}
		p.acks, p.acksErr = s, err
	})
	return p.acks, p.acksErr
}

// ackRange is the scope and the range of stream sequences the change
// replays (the target up to what the consumer has delivered); ok is false
// when nothing is replayed.
func (p *planner) ackRange(c *Change) (scope string, from, to uint64, ok bool) {
	if c.To.Sequence > c.From.Delivered {
		return "", 0, 0, false
	}
	scope = acks.DefaultScope(c.Stream, c.Consumer)
	if p.opts.AcksScope != "" {
		scope = acks.ScopeName(p.opts.AcksScope)
	}
	return scope, c.To.Sequence, c.From.Delivered, true
}

// countAcks fills AckRecordsInRange: the ack records (jsutil/acks) that
// would make the replay skip messages.
func (p *planner) countAcks(ctx context.Context, c *Change) error {
	scope, from, to, ok := p.ackRange(c)
	if !ok {
		return nil
	}
	s, err := p.ackStore(ctx)
	if err != nil || s == nil {
		return err
	}
	n, err := s.CountRange(ctx, scope, from, to)
	if err != nil {
		return jsutil.Wrap(err, "reset consumer %q on %q", c.Consumer, c.Stream)
	}
	c.AckRecordsInRange = n
	if n > 0 && !p.opts.ForgetAcks {
		c.warn("%d ack records in the replayed range will make the replay skip those messages; pass --forget-acks to run them again", n)
	}
	return nil
}

// forgetAcks deletes those records when Options.ForgetAcks is set.
func (p *planner) forgetAcks(ctx context.Context, c *Change) error {
	if !p.opts.ForgetAcks {
		return nil
	}
	scope, from, to, ok := p.ackRange(c)
	if !ok {
		return nil
	}
	s, err := p.ackStore(ctx)
	if err != nil || s == nil {
		return err
	}
	n, err := s.ForgetRange(ctx, scope, from, to)
	c.AckRecordsForgotten = n
	if err != nil {
		return jsutil.Wrap(err, "reset consumer %q on %q: forget ack records", c.Consumer, c.Stream)
	}
	return nil
}
