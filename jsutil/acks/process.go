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

// ErrStopped is the cause of a handler's context cancelled by the run's own
// stop: the context of Consume or Retry was cancelled and the drain timeout
// (WithDrainTimeout) passed, or the context of Process was cancelled. A
// handler that returns an error after that is not failed but Released: its
// claim is given back as it was before (the failed record it took over,
// with its count of failures, or nothing), the message is nak'd so that its
// next delivery runs it at once, and it counts toward neither
// WithMaxFailures nor dead letters. A handler that returns nil is
// processed as usual.
var ErrStopped = errors.New("stopped by the run's own stop")

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
	// Released: the handler was ended by the run's own stop (see
	// ErrStopped); the claim was given back and the message nak'd.
	Released Action = "released"
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
	Key        string // the dedup key (see WithKey)
	KeyFrom    KeyKind
	// KeySpec names what produced Key: a key spec ("header:Nats-Msg-Id",
	// "json:order.id", specs joined with " + "), a KeyFunc's name, or "seq".
	KeySpec string
	// Fence is the claim's KV revision: a fencing token that grows with
	// every new claim of any key in the bucket. Downstream systems can
	// refuse writes carrying a lower token than one already seen. It is 0
	// for messages processed without a record.
	Fence uint64
	// Idempotent is false for messages outside the idempotent subjects,
	// processed at least once without a record.
	Idempotent bool
	// Duplicate: the key is done and the handler runs anyway
	// (WithOnDuplicate(DuplicateRun), or a mismatch with MismatchRun), with
	// no claim (Fence is 0) and no record written. DuplicateOf is the
	// stream sequence the done record was made for and DuplicateTime when
	// it was written (the message's own sequence and a zero time when only
	// the consumer's floor knew it was done). Mismatch: the done record was
	// made for a different payload.
	Duplicate     bool
	DuplicateOf   uint64
	DuplicateTime time.Time
	Mismatch      bool
	// Retry: a run of Store.Retry on a message fetched from the stream (no
	// consumer delivered it).
	Retry bool
}

// Handler processes one message. A nil error marks it done; an error has it
// redelivered later. The context is cancelled when the lease is lost.
type Handler func(ctx context.Context, d Delivery) error

// Result says what happened to one message.
type Result struct {
	Action     Action    `json:"action"`
	Stream     string    `json:"stream"`
	Consumer   string    `json:"consumer"`
	Seq        uint64    `json:"seq"`
	Subject    string    `json:"subject"`
	Time       time.Time `json:"time"`
	Deliveries uint64    `json:"deliveries"`
	Scope      string    `json:"scope,omitempty"`
	Key        string    `json:"key"`
	KeyFrom    KeyKind   `json:"key_from,omitempty"`
	KeySpec    string    `json:"key_spec,omitempty"`
	// KeyMissing says why the message has no key of the configured specs:
	// it was keyed by its sequence (or failed with WithKeyRequired).
	KeyMissing string        `json:"key_missing,omitempty"`
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
	// Stale says why the record found under the message's key was
	// ignored: it belongs to another incarnation of the stream (see
	// incarnation.go). FloorStale lists the floor's ranges ignored for the
	// same reason.
	Stale      string   `json:"stale,omitempty"`
	FloorStale []string `json:"floor_stale,omitempty"`
	// DeadLetterRefused says why a pending dead letter its record names
	// was not published (see deadLetterProblem).
	DeadLetterRefused string `json:"dead_letter_refused,omitempty"`
	// ClaimProblem says what was wrong with another worker's claim found
	// under the key: its lease ran out by its own record (it was taken
	// over), or lies implausibly far ahead (see claimProblem).
	ClaimProblem string `json:"claim_problem,omitempty"`
	// DuplicateRun: the handler ran on a duplicate (see
	// Delivery.Duplicate); RecordSeq is the done record's sequence.
	DuplicateRun bool `json:"duplicate_run,omitempty"`
	// DeadLetterStream and DeadLetterSeq: the message failed for good and
	// was published to the dead-letter subject as this message (now, or by
	// an earlier delivery).
	DeadLetterStream string `json:"dead_letter_stream,omitempty"`
	DeadLetterSeq    uint64 `json:"dead_letter_seq,omitempty"`
	// DeadLettered: this delivery published the dead letter (or found it
	// published by a run that stopped before recording it).
	DeadLettered bool `json:"dead_lettered,omitempty"`
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
// A handler that fails after ctx was cancelled is Released (see
// ErrStopped), not failed. The returned error is nil for processed,
// duplicate and busy messages, and says why otherwise (it is also
// Result.Err).
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
	s.watchLastDelivery(ctx, j, &c)
	if s.admit(ctx, j, &c, freshFloor{s}) {
		ls := s.newLeases(c.lease)
		hctx, set := ls.hold(ctx, []*job{j})
		herr := handler(hctx, j.d)
		stopped := herr != nil && ctx.Err() != nil
		lost := ls.release(set)
		ls.close()
		switch {
		case lost:
			s.leaseLost(j, &c)
		case stopped:
			s.released(ctx, j, &c, herr)
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
		expires := dup.LeaseExpires
		if j.res.ClaimProblem != "" || expires.IsZero() {
			expires = dup.Time.Add(c.lease) // it is judged after one lease
		}
		j.res.Action, j.res.Retry = Busy, s.busyDelay(c, expires)
		_ = j.msg.NakWithDelay(j.res.Retry)
		return false
	case dup != nil && dup.State == StateFailed:
		s.deadLettered(ctx, j, c, dup) // claimRecord takes over other failed records
		return false
	case dup != nil:
		return s.duplicate(ctx, j, c, dup)
	}
	j.d.Fence, j.res.Fence = j.cl.fence, j.cl.fence
	if !j.cl.tookOver { // a failed record: run again, whatever the floor says
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
			j.res.BelowFloor = true
			return s.duplicate(ctx, j, c, nil)
		}
	}
	if j.keyMissing != "" && c.keyRequired {
		reason := "no key: " + j.keyMissing + " (a key is required)"
		j.res.Action, j.res.Err = Failed, jsutil.Errorf(jsutil.ErrBadInput, "message %d of stream %q has %s", j.d.Seq, j.d.Stream, reason)
		if !s.failForGood(ctx, j, c, j.cl.rev, reason, j.failures+1) {
			j.res.Retry = backoff(c.retryDelay, j.d.Deliveries)
			_ = j.msg.NakWithDelay(j.res.Retry)
		}
		return false
	}
	return true
}

// duplicate handles a message whose key is done (dup; nil when the
// consumer's floor covers it) as the duplicate and mismatch policies say:
// ack it without running the handler, run the handler anyway (returning
// true: no claim is held and no record will be written), or fail it for
// good (MismatchFail).
func (s *Store) duplicate(ctx context.Context, j *job, c *processConfig, dup *Record) bool {
	j.res.Action = Duplicate
	run := c.onDuplicate == DuplicateRun
	if dup != nil {
		j.res.RecordSeq, j.res.Mismatch = dup.Seq, dup.Hash != j.hash
		if j.res.Mismatch {
			switch c.onMismatch {
			case MismatchRun:
				run = true
			case MismatchFail:
				reason := fmt.Sprintf("key %q was done for message %d with a different payload", j.d.Key, dup.Seq)
				j.res.Action, j.res.Err = Failed, jsutil.Errorf(jsutil.ErrConflict, "message %d of stream %q: %s", j.d.Seq, j.d.Stream, reason)
				s.failWithoutRecord(ctx, j, c, reason)
				return false
			}
		}
	}
	if !run {
		j.res.Err = ackErr(j.msg.Ack(), j.d)
		s.dropWatch(ctx, j)
		return false
	}
	j.noClaim, j.res.DuplicateRun = true, true
	j.d.Duplicate, j.d.Mismatch, j.d.DuplicateOf = true, j.res.Mismatch, j.d.Seq
	j.d.Fence, j.res.Fence = 0, 0
	if dup != nil {
		j.d.DuplicateOf, j.d.DuplicateTime = dup.Seq, dup.Time
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
		if s.failForGood(ctx, j, c, ce.rev, "the ack record was corrupt: "+err.Error(), j.d.Deliveries) {
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
// the message failed for good (failForGood: a final failed record, the
// dead letter, the terminate). A failed record is never skipped: the next
// delivery takes it over and runs again. (A message outside the idempotent
// subjects, or a duplicate run, has no record: its count is its delivery
// count.)
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
	recorded := j.d.Idempotent && !j.noClaim
	n := j.d.Deliveries
	if recorded {
		n = j.failures + 1
	}
	final := j.d.Retry || (c.maxDeliver > 0 && j.d.Deliveries >= uint64(c.maxDeliver)) || (bound > 0 && n >= uint64(bound))
	j.res.Failures = n
	switch {
	case final && recorded:
		if s.failForGood(ctx, j, c, j.cl.rev, herr.Error(), n) {
			return
		}
	case final:
		if s.failWithoutRecord(ctx, j, c, herr.Error()) {
			return
		}
	case recorded:
		actx, cancel := after(ctx, c)
		defer cancel()
		_ = s.keepFailed(actx, j, j.cl.rev, herr.Error(), n, false)
	}
	j.res.Retry = backoff(base, n)
	_ = j.msg.NakWithDelay(j.res.Retry)
}

// released handles a handler ended by the run's own stop (see ErrStopped):
// its claim is given back and the message nak'd without a delay.
func (s *Store) released(ctx context.Context, j *job, c *processConfig, herr error) {
	j.res.Action, j.res.Err = Released, fmt.Errorf("%w: %w", ErrStopped, herr)
	if j.d.Idempotent && !j.noClaim {
		actx, cancel := after(ctx, c)
		defer cancel()
		s.giveBack(actx, j)
	}
	_ = j.msg.Nak()
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
	if !j.d.Idempotent || j.noClaim {
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
	s.dropWatch(ctx, j)
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
	if err := s.knowStream(ctx, j); err != nil {
		return false, "", err
	}
	fl.judge(j.streamCreated)
	j.res.FloorStale = fl.Stale
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
