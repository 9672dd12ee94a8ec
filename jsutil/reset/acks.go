package reset

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/acks"
)

// ackStore opens the ack-record bucket once per plan; a missing bucket is
// nil (no records).
func (p *planner) ackStore(ctx context.Context) (*acks.Store, error) {
	if p.acksOpened {
		return p.acks, nil
	}
	bucket := p.opts.AcksBucket
	if bucket == "" {
		bucket = acks.DefaultBucket
	}
	s, err := acks.OpenExisting(ctx, p.js, bucket)
	if errors.Is(err, jsutil.ErrNotFound) {
		s, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	p.acks, p.acksOpened = s, true
	return s, nil
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
	info, err := s.RangeRecords(ctx, scope, from, to)
	if err != nil {
		return jsutil.Wrap(err, "reset consumer %q on %q", c.Consumer, c.Stream)
	}
	n := info.Records
	c.AckRecordsInRange = n
	if n > 0 && !p.opts.ForgetAcks {
		c.warn("%d ack records in the replayed range will make the replay skip those messages; pass --forget-acks to run them again", n)
	}
	// A rewind past the retention: the records of the older messages of
	// the range have expired. How many is known when the scope is the
	// consumer's own (a shared scope holds other consumers' records too).
	if c.To.Time != nil && p.opts.Now().Sub(*c.To.Time) > info.Retention {
		age := p.opts.Now().Sub(*c.To.Time)
		w := fmt.Sprintf("ack records are kept %v and the replay starts at a message stored %v ago: records of messages handled more than %v ago have expired",
			info.Retention, age.Round(time.Second), info.Retention)
		if scope == acks.DefaultScope(c.Stream, c.Consumer) && c.Redeliver >= uint64(n) {
			w += fmt.Sprintf(" (%d of the %d messages in the range have no record)", c.Redeliver-uint64(n), c.Redeliver)
		}
		if !p.opts.ForgetAcks {
			w += "; the replay still skips those its consumer's floor covers"
		}
		c.warn("%s", w)
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
