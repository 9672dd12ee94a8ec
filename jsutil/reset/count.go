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
// its ack floor and before the target).
func (p *planner) count(ctx context.Context, c *Change) error {
	seq := c.To.Sequence
	if seq <= c.From.Delivered {
		a, err := p.countFrom(ctx, c, seq)
		if err != nil {
			return err
		}
		b, err := p.countFrom(ctx, c, c.From.Delivered+1)
		if err != nil {
			return err
		}
		if a > b {
			c.Redeliver = a - b
		}
	}
	if seq > c.From.AckFloor+1 {
		a, err := p.countFrom(ctx, c, c.From.AckFloor+1)
		if err != nil {
			return err
		}
		b, err := p.countFrom(ctx, c, seq)
		if err != nil {
			return err
		}
		if a > b {
			c.Skip = a - b
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
	if a <= b {
		return nil
	}
	c.NeverDelivered = a - b
	switch target.Kind {
	case ToTime, ByDuration, ToSeq, ToEarliest, ToAckFloor:
	default:
		return nil
	}
	noun := "messages"
	if c.NeverDelivered == 1 {
		noun = "message"
	}
	count := fmt.Sprint(c.NeverDelivered)
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
// in a warning.
func (p *planner) countFrom(ctx context.Context, c *Change, seq uint64) (uint64, error) {
	return p.countFiltered(ctx, c, c.Filters, seq)
}

// countFiltered is countFrom with the given filters (none: all subjects)
// instead of the consumer's own; warnings go to c.
func (p *planner) countFiltered(ctx context.Context, c *Change, filters []string, seq uint64) (uint64, error) {
	st := p.info.State
	last := st.LastSeq
	if seq > last {
		return 0, nil
	}
	key := fmt.Sprintf("%d|%s", seq, strings.Join(filters, " "))
	p.mu.Lock()
	n, ok := p.counts[key]
	p.mu.Unlock()
	if ok {
		return n, nil
	}
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
	if err != nil {
		if ctx.Err() != nil {
			return 0, jsutil.Wrap(err, "count messages for consumer %q on %q", c.Consumer, c.Stream)
		}
		n = bySeq
		c.countsBound = true
		c.warn("counted by sequence numbers (at most %d messages): %v", n, err)
	}
	p.mu.Lock()
	p.counts[key] = n
	p.mu.Unlock()
	return n, nil
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
	cons, err := p.stream.CreateConsumer(ctx, cfg)
	if err != nil {
		return 0, jsutil.Wrap(jsutil.RequestError(p.js.Conn(), jsutil.APIPrefix(p.js.Options())+"CONSUMER.CREATE."+c.Stream+"."+cfg.Name, err), "create a temporary counting consumer")
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
