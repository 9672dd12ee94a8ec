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
// replays (the target up to what the consumer has delivered; for a
// consumer created from a saved configuration, which may have delivered
// anything before it was deleted, up to the stream's last message); ok is
// false when nothing is replayed.
func (p *planner) ackRange(c *Change) (scope string, from, to uint64, ok bool) {
	upTo := c.From.Delivered
	if c.Method == Create {
		upTo = p.info.State.LastSeq
	}
	if c.To.Sequence > upTo {
		return "", 0, 0, false
	}
	return p.ackScope(c), c.To.Sequence, upTo, true
}

// ackScope is the ack-record scope of c's consumer.
func (p *planner) ackScope(c *Change) string {
	if p.opts.AcksScope != "" {
		return acks.ScopeName(p.opts.AcksScope)
	}
	return acks.DefaultScope(c.Stream, c.Consumer)
}

// countAcks fills AckRecordsInRange: the ack records (jsutil/acks) that
// would make the replay skip messages.
//
// Records it cannot use are reported, not counted and not forgotten: those
// that do not read (or are another's), and the sequence-keyed records of an
// earlier stream of the name (the judgement consume makes). With
// --forget-acks they are looked for from the target on even when nothing is
// replayed (a consumer added again to a stream created again): the user
// asked about the records, and those there prove nothing.
func (p *planner) countAcks(ctx context.Context, c *Change) error {
	scope, from, to, ok := p.ackRange(c)
	if !ok {
		if !p.opts.ForgetAcks {
			return nil
		}
		scope, from, to = p.ackScope(c), c.To.Sequence, 0
	}
	s, err := p.ackStore(ctx)
	if err != nil || s == nil {
		return err
	}
	info, err := s.RangeRecords(ctx, scope, from, to)
	if err != nil {
		return jsutil.Wrap(err, "reset consumer %q on %q", c.Consumer, c.Stream)
	}
	for _, bad := range info.Corrupt {
		c.warn("%v: skipped (jsctl acks forget --corrupt removes it)", bad)
	}
	if info.Stale > 0 {
		more := ""
		if info.Stale > 1 {
			more = fmt.Sprintf(" (and %d more such records, of messages %d to %d)", info.Stale-1, info.StaleFrom, info.StaleTo)
		}
		c.warn("%s%s: not counted, and not forgotten (jsctl acks ls --scope %s shows them; acks forget removes them when asked)",
			info.StaleWhy, more, acks.ScopeDisplay(scope))
	}
	if !ok {
		return nil
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
		if r := c.Redeliver; scope == acks.DefaultScope(c.Stream, c.Consumer) && r != nil && *r >= uint64(n) {
			w += fmt.Sprintf(" (%d of the %d messages in the range have no record)", *r-uint64(n), *r)
		}
		if !p.opts.ForgetAcks {
			w += "; the replay still skips those its consumer's floor covers"
		}
		c.warn("%s", w)
	}
	return nil
}

// Forget is the range of ack records a change forgets (--forget-acks),
// kept in its intent so that recover forgets them too.
type Forget struct {
	Bucket string `json:"bucket"`
	Scope  string `json:"scope"`
	From   uint64 `json:"from_seq"`
	To     uint64 `json:"to_seq"`
}

// forgetRange is what the change forgets when Options.ForgetAcks is set.
func (p *planner) forgetRange(c *Change) *Forget {
	if !p.opts.ForgetAcks {
		return nil
	}
	scope, from, to, ok := p.ackRange(c)
	if !ok {
		return nil
	}
	bucket := p.opts.AcksBucket
	if bucket == "" {
		bucket = acks.DefaultBucket
	}
	return &Forget{Bucket: bucket, Scope: scope, From: from, To: to}
}

// forgetAcks deletes the ack records of f (none when f is nil; a missing
// bucket holds none). Forgetting is idempotent.
func (p *planner) forgetAcks(ctx context.Context, c *Change, f *Forget) error {
	if f == nil {
		return nil
	}
	s, err := acks.OpenExisting(ctx, p.js, f.Bucket)
	if errors.Is(err, jsutil.ErrNotFound) {
		return nil
	}
	if err != nil {
		return jsutil.Wrap(err, "reset consumer %q on %q: forget ack records", c.Consumer, c.Stream)
	}
	n, err := s.ForgetRange(ctx, f.Scope, f.From, f.To)
	c.AckRecordsForgotten = n
	if err != nil {
		return jsutil.Wrap(err, "reset consumer %q on %q: forget ack records", c.Consumer, c.Stream)
	}
	return nil
}

// noteForward tells the consumer's floor in its ack-record scope (see
// jsutil/acks) that an in-place move forward skips messages it never
// handled, so the floor never counts them as handled. It runs before the
// move: if the move then fails or is interrupted, the floor only covers
// less. A recreate needs no note (the consumer's creation time changes,
// which opens a new range). A bucket or floor that does not exist needs
// none either. The bucket and scope are the intent's, so recover notes
// the move where the change would have.
func (p *planner) noteForward(ctx context.Context, c *Change, in *Intent, st *consumerState) error {
	if c.Method != Reset || c.To.Sequence <= c.From.AckFloor+1 || st == nil {
		return nil
	}
	var s *acks.Store
	var err error
	if in.AcksBucket == p.opts.AcksBucket {
		s, err = p.ackStore(ctx)
	} else {
		bucket := in.AcksBucket
		if bucket == "" {
			bucket = acks.DefaultBucket
		}
		if s, err = acks.OpenExisting(ctx, p.js, bucket); errors.Is(err, jsutil.ErrNotFound) {
			s, err = nil, nil
		}
	}
	if err != nil {
		return jsutil.Wrap(err, "reset consumer %q on %q: note the forward move in its ack-record floor", c.Consumer, c.Stream)
	}
	if s == nil {
		return nil
	}
	scope := acks.DefaultScope(c.Stream, c.Consumer)
	if in.AcksScope != "" {
		scope = acks.ScopeName(in.AcksScope)
	}
	ref := acks.FloorRef{Scope: scope, Stream: c.Stream, Consumer: c.Consumer}
	if err := s.NoteForwardMove(ctx, ref, st.info, c.To.Sequence); err != nil {
		return jsutil.Wrap(err, "reset consumer %q on %q: note the forward move in its ack-record floor", c.Consumer, c.Stream)
	}
	return nil
}
