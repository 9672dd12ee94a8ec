package reset

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// TempPrefix starts the names of the short-lived consumers jsctl makes for
// itself (counting messages, keeping interest during a recreate), so they
// can be recognised; they expire on the server when left behind.
const TempPrefix = "jsctl_tmp_"

// countInactive is how long a temporary counting consumer outlives a
// jsctl that died before deleting it.
const countInactive = 5 * time.Second

// msgTime is the stored time of message seq, nil when there is none or
// when it is not known (msgTimeErr tells them apart).
func (p *planner) msgTime(ctx context.Context, seq uint64) *time.Time {
	t, _ := p.msgTimeErr(ctx, seq)
	return t
}

// msgTimeErr is the stored time of message seq, nil when there is none,
// or the error that keeps it unknown (a refused or unanswered read).
func (p *planner) msgTimeErr(ctx context.Context, seq uint64) (*time.Time, error) {
	if seq == 0 || seq > p.info.State.LastSeq {
		return nil, nil
	}
	p.mu.Lock()
	t, ok := p.times[seq]
	terr := p.timeErrs[seq]
	p.mu.Unlock()
	if ok {
		return t, terr
	}
	var out *time.Time
	m, err := p.msgs.At(ctx, seq)
	if err != nil {
		err = jsutil.Wrap(err, "read the time of message %d of stream %q", seq, p.info.Config.Name)
	} else if m != nil {
		t := m.Time.UTC()
		out = &t
	}
	p.mu.Lock()
	p.times[seq] = out
	if err != nil {
		if p.timeErrs == nil {
			p.timeErrs = map[uint64]error{}
		}
		p.timeErrs[seq] = err
	}
	p.mu.Unlock()
	return out, err
}

// count fills Redeliver (the messages matching the consumer's filters from
// the target up to the consumer's delivered sequence) and Skip (those after
// its ack floor and before the target); each stays nil, unknown, when a
// count it needs could not be made.
func (p *planner) count(ctx context.Context, c *Change) error {
	seq := c.To.Sequence
	zero := uint64(0)
	c.Redeliver, c.Skip = &zero, &zero
	between := func(from, to uint64) (*uint64, error) {
		a, err := p.countFrom(ctx, c, from)
		if err != nil || a == nil {
			return nil, err
		}
		b, err := p.countFrom(ctx, c, to)
		if err != nil || b == nil {
			return nil, err
		}
		n := uint64(0)
		if *a > *b {
			n = *a - *b
		}
		return &n, nil
	}
	var err error
	if seq <= c.From.Delivered {
		if c.Redeliver, err = between(seq, c.From.Delivered+1); err != nil {
			return err
		}
	}
	if seq > c.From.AckFloor+1 {
		if c.Skip, err = between(c.From.AckFloor+1, seq); err != nil {
			return err
		}
	}
	return nil
}

// noteNeverDelivered fills NeverDelivered: the messages within the
// consumer's filters after its delivered sequence and before the target,
// which a move there skips without the consumer ever having received them.
// Where the target names a point to go back to (a time, a duration, a
// sequence, the earliest message, the ack floor) the change warns: such a
// "rewind" moves the consumer forward, typically one created after the
// traffic. The targets that move forward by design (--to-latest,
// --shift-by=+N, another consumer's position, the undo of a rewind) are
// counted and not warned about.
func (p *planner) noteNeverDelivered(ctx context.Context, c *Change, target Target) error {
	seq := c.To.Sequence
	zero := uint64(0)
	c.NeverDelivered = &zero
	if seq <= c.From.Delivered+1 {
		return nil
	}
	// These counts' own notes (an upper bound) are said once already, by
	// count's.
	warned := len(c.Warnings)
	a, err := p.countFrom(ctx, c, c.From.Delivered+1)
	if err != nil {
		return err
	}
	b, err := p.countFrom(ctx, c, seq)
	if err != nil {
		return err
	}
	c.Warnings = c.Warnings[:warned]
	if a == nil || b == nil {
		// Unknown: count's own warning says why; the move may still skip
		// messages the consumer never received.
		c.NeverDelivered = nil
		switch target.Kind {
		case ToTime, ByDuration, ToSeq, ToEarliest, ToAckFloor:
			c.warn("this may move the consumer forward, not back: it has delivered up to sequence %d and the target is %d; how many messages it never received would be skipped is unknown",
				c.From.Delivered, seq)
		}
		return nil
	}
	if *a <= *b {
		return nil
	}
	n := *a - *b
	c.NeverDelivered = &n
	switch target.Kind {
	case ToTime, ByDuration, ToSeq, ToEarliest, ToAckFloor:
	default:
		return nil
	}
	noun := "messages"
	if n == 1 {
		noun = "message"
	}
	count := fmt.Sprint(n)
	if c.countsBound {
		count = "at most " + count
	}
	c.warn("this moves the consumer forward, not back: it has delivered up to sequence %d, so the target %d skips %s %s it never received (without the move it would deliver them)",
		c.From.Delivered, seq, count, noun)
	return nil
}

// countFrom counts the messages matching the consumer's filters at or after
// seq, with the cheapest exact method the stream allows:
//
//   - sequence numbers, when the consumer takes every subject and the
//     stream has no interior deletes;
//   - a direct get (batch of one, the server's pending count), when the
//     stream allows direct gets and the consumer has at most one filter;
//   - a temporary consumer's pending count, except on a work-queue stream
//     (which allows no second consumer on the same subjects).
//
// Where none applies it counts sequence numbers, an upper bound, and says so
// in a warning. A count that a refused or unanswered request keeps from
// being made is nil (unknown), with a warning naming why.
func (p *planner) countFrom(ctx context.Context, c *Change, seq uint64) (*uint64, error) {
	return p.countFiltered(ctx, c, c.Filters, seq)
}

// countFiltered is countFrom with the given filters (none: all subjects)
// instead of the consumer's own; warnings go to c.
func (p *planner) countFiltered(ctx context.Context, c *Change, filters []string, seq uint64) (*uint64, error) {
	st := p.info.State
	last := st.LastSeq
	if seq > last {
		zero := uint64(0)
		return &zero, nil
	}
	key := fmt.Sprintf("%d|%s", seq, strings.Join(filters, " "))
	p.mu.Lock()
	known, ok := p.counts[key]
	p.mu.Unlock()
	if ok {
		return known, nil
	}
	var n uint64
	bySeq := last + 1 - max(seq, st.FirstSeq, 1)
	cfg := p.info.Config
	var err error
	switch {
	case len(filters) == 0 && st.NumDeleted == 0:
		n = bySeq
	case cfg.AllowDirect && len(filters) <= 1 && !jsutil.DirectGetsRefused(ctx, cfg.Name):
		filter := ">"
		if len(filters) == 1 {
			filter = filters[0]
		}
		n, err = p.directCount(ctx, seq, filter)
		if errors.Is(err, jsutil.ErrPermission) && cfg.Retention != jetstream.WorkQueuePolicy {
			// Refused at once (the run's refusals end the request):
			// count exactly another way, for the rest of the run.
			jsutil.DirectGetRefused(ctx, p.js, cfg.Name, "counting with temporary consumers instead")
			n, err = p.consumerCount(ctx, c, filters, seq)
		}
	case cfg.Retention == jetstream.WorkQueuePolicy:
		n = bySeq
		c.countsBound = true
		c.warn("counted by sequence numbers (at most %d messages): on a work-queue stream only the stream's direct get (allow_direct) can count this consumer's messages, and this stream does not allow it", n)
	default:
		n, err = p.consumerCount(ctx, c, filters, seq)
	}
	out := &n
	if err != nil {
		if ctx.Err() != nil {
			return nil, jsutil.Wrap(err, "count messages for consumer %q on %q", c.Consumer, c.Stream)
		}
		out = nil
		c.warn("the number of messages it redelivers or skips is unknown (at most %d from sequence %d): %v", bySeq, seq, err)
	}
	p.mu.Lock()
	p.counts[key] = out
	p.mu.Unlock()
	return out, nil
}

// consumerCount asks a temporary consumer (memory, R1, no acks, a short
// inactive threshold) starting at seq for its pending count.
func (p *planner) consumerCount(ctx context.Context, c *Change, filters []string, seq uint64) (uint64, error) {
	cfg := jetstream.ConsumerConfig{
		Name:              TempPrefix + "count_" + newID(),
		Description:       "jsctl: counts messages for a reset plan (temporary)",
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       seq,
		AckPolicy:         jetstream.AckNonePolicy,
		InactiveThreshold: countInactive,
		MemoryStorage:     true,
		Replicas:          1,
	}
	if len(filters) == 1 {
		cfg.FilterSubject = filters[0]
	} else {
		cfg.FilterSubjects = filters
	}
	create := jsutil.APIPrefix(p.js.Options()) + "CONSUMER.CREATE." + c.Stream + "." + cfg.Name
	wctx, stop := jsutil.EndOnRefusalPrefix(ctx, create)
	cons, err := p.stream.CreateConsumer(wctx, cfg)
	err = jsutil.RefusedCause(wctx, err)
	stop()
	if err != nil {
		return 0, jsutil.Wrap(jsutil.RequestError(p.js.Conn(), create, err), "create a temporary counting consumer")
	}
	n := cons.CachedInfo().NumPending
	dctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
	defer cancel()
	_ = p.stream.DeleteConsumer(dctx, cfg.Name) // else it expires by itself
	return n, nil
}

// directCount asks a direct get (batch of one) from seq for the number of
// messages matching filter at or after seq.
func (p *planner) directCount(ctx context.Context, seq uint64, filter string) (uint64, error) {
	n, err := jsutil.DirectPending(ctx, p.js, p.info.Config.Name, seq, filter, jsutil.RequestOptions{Timeout: requestTimeout})
	if err != nil {
		return 0, jsutil.Wrap(err, "count with a direct get")
	}
	return n, nil
}
