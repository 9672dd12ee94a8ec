package acks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrLeaseLost marks a handler whose claim ran out or was taken over while
// it ran: its context is cancelled and the message is neither acked nor
// marked done. It is a jsutil.ErrConflict.
var ErrLeaseLost = errors.New("lease lost")

// Action is what Process did with a message.
type Action string

// Actions.
const (
	// Processed: the handler ran and succeeded; the record is done and the
	// message acked.
	Processed Action = "processed"
	// Duplicate: a done record (or the scope's floor) shows the message was
	// handled before; it was acked without running the handler.
	Duplicate Action = "duplicate"
	// Failed: the handler failed (or the lease was lost, or the record could
	// not be read or written); the claim was released and the message will
	// be redelivered.
	Failed Action = "failed"
	// Busy: another live worker holds the claim; the message was nak'd with
	// a delay without running the handler.
	Busy Action = "busy"
)

// Delivery is what a handler gets besides the message.
type Delivery struct {
	Msg        jetstream.Msg
	Stream     string
	Consumer   string
	Subject    string
	Seq        uint64 // stream sequence
	Time       time.Time
	Deliveries uint64
	Scope      string
	Key        string // the dedup key (header value or sequence)
	KeyFrom    KeyKind
	// Fence is the claim's KV revision: a fencing token that grows with
	// every new claim of any key in the bucket. Downstream systems can
	// refuse writes carrying a lower token than one already seen. It is 0
	// for messages processed without a record.
	Fence uint64
	// Idempotent is false for messages outside the idempotent subjects,
	// processed at least once without a record.
	Idempotent bool
}

// Handler processes one message. A nil error marks it done; an error has it
// redelivered later. The context is cancelled when the lease is lost.
type Handler func(ctx context.Context, d Delivery) error

// Result says what happened to one message.
type Result struct {
	Action     Action        `json:"action"`
	Stream     string        `json:"stream"`
	Consumer   string        `json:"consumer"`
	Seq        uint64        `json:"seq"`
	Subject    string        `json:"subject"`
	Time       time.Time     `json:"time"`
	Deliveries uint64        `json:"deliveries"`
	Scope      string        `json:"scope,omitempty"`
	Key        string        `json:"key"`
	KeyFrom    KeyKind       `json:"key_from,omitempty"`
	Idempotent bool          `json:"idempotent"`
	Fence      uint64        `json:"fence,omitempty"`
	Duration   time.Duration `json:"-"`
	// Mismatch: the payload's hash differs from the one in the done record
	// under the same key (a different message reusing the key).
	Mismatch bool `json:"mismatch,omitempty"`
	// RecordSeq is the stream sequence the matching done record was made
	// for (for duplicates).
	RecordSeq uint64 `json:"record_seq,omitempty"`
	// BelowFloor: a duplicate found by the scope's floor (its record was
	// compacted).
	BelowFloor bool `json:"below_floor,omitempty"`
	// LeaseLost: the claim was lost while the handler ran.
	LeaseLost bool `json:"lease_lost,omitempty"`
	// Final: the message failed for good (its last allowed delivery, or a
	// bound of ours): a failed record was kept and the message terminated.
	Final bool `json:"final,omitempty"`
	// CannotRun: the handler could not run for this message (see
	// CannotRun), or its record could not be read or written.
	CannotRun bool `json:"cannot_run,omitempty"`
	// Retry is the nak delay of a failed or busy message.
	Retry time.Duration `json:"-"`
	// Failures counts the message's failures so far (for a failed one).
	Failures uint64 `json:"failures,omitempty"`
	// FloorCorrupt says why the consumer's floor was ignored, when it was.
	FloorCorrupt string `json:"floor_corrupt,omitempty"`
	// Err is why the message failed (or a failed acknowledgment).
	Err error `json:"-"`
}

// CannotRun marks a handler's error as "the handler could not run for this
// message" rather than its own failure (say, a key that cannot be passed
// to it). Such a message is redelivered with a growing delay and, after
// WithMaxCannotRun deliveries, terminated and recorded as failed.
func CannotRun(err error) error {
	if err == nil {
		return nil
	}
	return &cannotRunErr{err: err}
}

type cannotRunErr struct{ err error }

func (e *cannotRunErr) Error() string { return e.err.Error() }
func (e *cannotRunErr) Unwrap() error { return e.err }

// IsCannotRun reports whether err was marked with CannotRun.
func IsCannotRun(err error) bool {
	var c *cannotRunErr
	return errors.As(err, &c)
}

// Process handles one message: it runs handler at most once per dedup key
// (see the package documentation), then acks, naks or terminates the
// message as the result says. Consume also keeps the consumer's floor;
// callers of Process alone may call AdvanceFloor with their consumer's info.
// The returned error is nil for processed, duplicate and busy messages, and
// says why otherwise (it is also Result.Err).
func (s *Store) Process(ctx context.Context, msg jetstream.Msg, handler Handler, opts ...ProcessOption) (Result, error) {
	var c processConfig
	for _, o := range opts {
		o.applyProcess(&c)
	}
	if err := c.check(); err != nil {
		return Result{Action: Failed, Err: err}, err
	}
	if err := s.checkLease(c.lease); err != nil {
		return Result{Action: Failed, Err: err}, err
	}
	start := time.Now()
	j, err := s.prepare(msg, &c)
	if err != nil {
		return j.res, err
	}
	if s.admit(ctx, j, &c, freshFloor{s}) {
		ls := s.newLeases(c.lease)
		hctx, set := ls.hold(ctx, []*job{j})
		herr := handler(hctx, j.d)
		lost := ls.release(set)
		ls.close()
		switch {
		case lost:
			s.leaseLost(j, &c)
		case herr != nil:
			s.handlerFailed(ctx, j, &c, herr)
		default:
			s.finishDone(ctx, j, &c)
		}
	}
	j.res.Duration = time.Since(start)
	return j.res, j.res.Err
}

// after returns a context for writes that must happen even when ctx is
// cancelled (so no claim is left behind), bounded by the lease.
func after(ctx context.Context, c *processConfig) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), max(c.lease, 10*time.Second))
}

// admit claims j's record and decides whether its handler runs. When it
// does not (a duplicate, a busy key, a record that cannot be claimed), admit
// finishes the message itself (ack or nak) and returns false.
func (s *Store) admit(ctx context.Context, j *job, c *processConfig, fl floorSource) bool {
	if !j.d.Idempotent {
		return true
	}
	dup, err := s.claimRecord(ctx, j, c.lease)
	return s.admitClaimed(ctx, j, c, fl, dup, err)
}

// admitClaimed is admit once the claim was tried: dup is the record found
// instead, err why the claim failed.
func (s *Store) admitClaimed(ctx context.Context, j *job, c *processConfig, fl floorSource, dup *Record, err error) bool {
	switch {
	case err != nil:
		s.recordTrouble(ctx, j, c, err)
		return false
	case dup != nil && dup.State == StateClaim:
		j.res.Action, j.res.Retry = Busy, s.busyDelay(c, dup.LeaseExpires)
		_ = j.msg.NakWithDelay(j.res.Retry)
		return false
	case dup != nil:
		j.res.Action, j.res.RecordSeq, j.res.Mismatch = Duplicate, dup.Seq, dup.Hash != j.hash
		j.res.Err = ackErr(j.msg.Ack(), j.d)
		return false
	}
	j.d.Fence, j.res.Fence = j.cl.fence, j.cl.fence
	if j.cl.tookOver {
		return true // a failed record: run again, whatever the floor says
	}
	covered, why, err := fl.covered(ctx, j)
	j.res.FloorCorrupt = why
	if err != nil || covered {
		actx, cancel := after(ctx, c)
		defer cancel()
		s.release(actx, j, j.cl.rev)
		if err != nil {
			s.recordTrouble(ctx, j, c, err)
			return false
		}
		// Done before, its record compacted or expired.
		j.res.Action, j.res.BelowFloor = Duplicate, true
		j.res.Err = ackErr(j.msg.Ack(), j.d)
		return false
	}
	return true
}

// recordTrouble handles a message whose record could not be claimed or
// read: it is redelivered with a growing delay. A corrupt record is kept as
// it is (and reported) until the message's deliveries reach the bound; then
// a failed record naming the corruption replaces it and the message is
// terminated. Without a readable record nothing else is terminated: the
// record layer is down, not the message.
func (s *Store) recordTrouble(ctx context.Context, j *job, c *processConfig, err error) {
	j.res.Action, j.res.Err, j.res.CannotRun = Failed, err, true
	var ce *errCorrupt
	if errors.As(err, &ce) && c.final(j.d.Deliveries, c.maxCannotRun) {
		actx, cancel := after(ctx, c)
		defer cancel()
		if s.keepFailed(actx, j, ce.rev, "the ack record was corrupt: "+err.Error(), j.d.Deliveries, true) == nil {
			s.terminate(j, "corrupt ack record")
			return
		}
	}
	j.res.Retry = backoff(c.retryDelay, j.d.Deliveries)
	_ = j.msg.NakWithDelay(j.res.Retry)
}

// handlerFailed handles a handler's error. The claim becomes a failed
// record holding the reason and the message's count of failures, and the
// message is redelivered after a delay that doubles with each failure. When
// the count reaches WithMaxFailures (WithMaxCannotRun for a CannotRun
// error), or the consumer will not deliver the message again (MaxDeliver),
// the failed record is final and the message is terminated. A failed
// record is never skipped: the next delivery takes it over and runs again.
// (A message outside the idempotent subjects has no record: its count is
// its delivery count.)
func (s *Store) handlerFailed(ctx context.Context, j *job, c *processConfig, herr error) {
	j.res.Action, j.res.Err = Failed, herr
	bound, base := c.maxFailures, c.retryDelay
	if IsCannotRun(herr) {
		j.res.CannotRun = true
		bound = c.maxCannotRun
		if c.maxFailures > 0 {
			bound = min(bound, c.maxFailures)
		}
	}
	n := j.d.Deliveries
	if j.d.Idempotent {
		n = j.failures + 1
	}
	final := (c.maxDeliver > 0 && j.d.Deliveries >= uint64(c.maxDeliver)) || (bound > 0 && n >= uint64(bound))
	actx, cancel := after(ctx, c)
	defer cancel()
	if j.d.Idempotent && s.keepFailed(actx, j, j.cl.rev, herr.Error(), n, final) != nil {
		final = false // not recorded: never terminate without a record
	}
	j.res.Failures = n
	if final {
		s.terminate(j, herr.Error())
		return
	}
	j.res.Retry = backoff(base, n)
	_ = j.msg.NakWithDelay(j.res.Retry)
}

// terminate ends a message that failed for good.
func (s *Store) terminate(j *job, reason string) {
	if len(reason) > 200 {
		reason = reason[:200]
	}
	j.res.Final = true
	_ = j.msg.TermWithReason(reason)
}

// leaseLost handles a handler whose claim was lost while it ran: nothing is
// acked or marked done; the message comes back once the lease that took
// over has run out.
func (s *Store) leaseLost(j *job, c *processConfig) {
	j.res.Action, j.res.LeaseLost = Failed, true
	j.res.Err = jsutil.Classify(jsutil.ErrConflict, fmt.Errorf("ack record %q: %w", j.kvKey, ErrLeaseLost))
	j.res.Retry = s.busyDelay(c, time.Time{})
	_ = j.msg.NakWithDelay(j.res.Retry)
}

// finishDone marks the record done, then acks the message (a plain ack: a
// lost ack only causes a redelivery, which the done record catches).
func (s *Store) finishDone(ctx context.Context, j *job, c *processConfig) {
	if !j.d.Idempotent {
		j.res.Action = Processed
		j.res.Err = ackErr(j.msg.Ack(), j.d)
		return
	}
	actx, cancel := after(ctx, c)
	defer cancel()
	if err := s.markDone(actx, j, j.cl.rev); err != nil {
		j.res.Action, j.res.Err, j.res.LeaseLost = Failed, err, errors.Is(err, ErrLeaseLost)
		j.res.Retry = s.busyDelay(c, time.Time{})
		_ = j.msg.NakWithDelay(j.res.Retry)
		return
	}
	j.res.Action = Processed
	j.res.Err = ackErr(j.msg.Ack(), j.d)
}

// keepKey is the dedup key to store in the record's value: only when the
// record key holds a hash of it.
func keepKey(d Delivery) string {
	if hashedKey(d.KeyFrom, d.Key) {
		return d.Key
	}
	return ""
}

func ackErr(err error, d Delivery) error {
	if err == nil {
		return nil
	}
	return jsutil.Wrap(err, "ack message %d of stream %q", d.Seq, d.Stream)
}

// busyDelay is how long to defer a message whose claim is held elsewhere:
// until that lease would run out (so a dead worker's claim has expired by
// then), bounded by the lease.
func (s *Store) busyDelay(c *processConfig, expires time.Time) time.Duration {
	if c.busyDelay > 0 {
		return c.busyDelay
	}
	d := c.lease / 4
	if !expires.IsZero() {
		d = time.Until(expires) + 250*time.Millisecond
	}
	return min(max(d, 250*time.Millisecond), c.lease)
}

// floorSource decides whether the consumer's floor covers a claimed
// message (it was handled before and its record compacted or expired).
type floorSource interface {
	covered(ctx context.Context, j *job) (ok bool, corrupt string, err error)
}

// freshFloor reads the floor from the bucket's leader for each message
// (Process alone).
type freshFloor struct{ s *Store }

func (f freshFloor) covered(ctx context.Context, j *job) (bool, string, error) {
	fl, err := f.s.ReadFloor(ctx, FloorRef{Scope: j.d.Scope, Stream: j.d.Stream, Consumer: j.d.Consumer})
	if err != nil {
		return false, "", err
	}
	return f.s.trust(ctx, &fl, j)
}

// trust decides with a floor just read: it covers j and is not corrupt. A
// floor reaching past what the message's metadata proves of the stream's
// end is checked against the stream's last sequence first.
func (s *Store) trust(ctx context.Context, fl *Floor, j *job) (bool, string, error) {
	if !fl.Covers(j.d.Seq, j.d.Subject) {
		return false, fl.Corrupt, nil
	}
	if fl.end() > j.d.Seq+j.pending {
		last, err := s.lastSeq(ctx, j.d.Stream)
		if err != nil {
			return false, "", err
		}
		CheckFloor(fl, last)
	}
	return fl.Corrupt == "", fl.Corrupt, nil
}
