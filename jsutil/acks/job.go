package acks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// job is one delivery on its way through the protocol.
type job struct {
	msg   jetstream.Msg
	d     Delivery
	res   Result
	kvKey string
	hash  string
	cl    claim
	// pending is the consumer's pending count after this message, from its
	// metadata: the stream's last sequence is at least d.Seq+pending.
	pending uint64
	got     time.Time // when it was received
	// claimFut is a claim published ahead (Consume claims a message as it
	// is fetched); claimSent is when it was sent.
	claimFut  jetstream.PubAckFuture
	claimSent time.Time
	// failures is the count of the failed record the claim took over
	// (0 when there was none, or it was final).
	failures uint64
	// keyMissing says why the message has no key of the configured specs
	// (it is then keyed by its sequence).
	keyMissing string
	// noClaim: the handler runs on a duplicate without a claim (see
	// DuplicateRun); no record is written for it.
	noClaim bool
	// watch: a dead-letter watch was written for this delivery (its last
	// allowed one; see deadletter.go).
	watch bool
	// retry: a run of Store.Retry, which takes over a dead-lettered record.
	retry bool
	// prev is the failed record the claim took over, as stored (nil when
	// there was none), so that a released claim can be given back.
	prev []byte
	// stopped: the handler was ended by the run's own stop (ErrStopped).
	stopped bool
	// unsettled: Consume counts it among the messages whose handler
	// started and whose outcome is not settled (see loop.unsettle).
	unsettled bool
	// streamCreated and consumerCreated: the incarnations of the message's
	// stream and consumer (zero: not known yet; see incarnation.go).
	streamCreated, consumerCreated time.Time
}

// claim is a claim this worker holds.
type claim struct {
	rev, fence uint64
	// sent is when the claim's last stored write was sent: its TTL runs
	// out no earlier than sent + lease.
	sent time.Time
	// tookOver: the key held a failed record, so the message is not a
	// duplicate whatever the floor says.
	tookOver bool
}

// prepare reads a delivery's metadata and dedup key.
func (s *Store) prepare(msg jetstream.Msg, c *processConfig) (*job, error) {
	meta, err := msg.Metadata()
	if err != nil {
		err = jsutil.Errorf(jsutil.ErrBadInput, "message on %q is not a jetstream message: %w", msg.Subject(), err)
		return &job{msg: msg, res: Result{Action: Failed, Subject: msg.Subject(), Err: err}}, err
	}
	d := Delivery{
		Msg: msg, Stream: meta.Stream, Consumer: meta.Consumer, Subject: msg.Subject(),
		Seq: meta.Sequence.Stream, Time: meta.Timestamp, Deliveries: meta.NumDelivered,
		Scope: c.scope, Idempotent: matchAny(c.subjects, msg.Subject()),
	}
	if d.Scope == "" {
		d.Scope = DefaultScope(meta.Stream, meta.Consumer)
	}
	k := c.deriveKey(msg, d.Subject, d.Seq)
	d.KeyFrom, d.Key, d.KeySpec = k.kind, k.key, k.spec
	j := &job{msg: msg, d: d, pending: meta.NumPending, got: time.Now(), keyMissing: k.missing,
		streamCreated: c.streamCreated, consumerCreated: c.consumerCreated}
	j.res = Result{
		Stream: d.Stream, Consumer: d.Consumer, Seq: d.Seq, Subject: d.Subject, Time: d.Time,
		Deliveries: d.Deliveries, Scope: d.Scope, Key: d.Key, KeyFrom: d.KeyFrom, KeySpec: d.KeySpec,
		KeyMissing: k.missing, Idempotent: d.Idempotent,
	}
	if d.Idempotent {
		j.kvKey = recordKey(d.Scope, d.KeyFrom, d.Key)
		j.hash = PayloadHash(msg.Data())
	}
	return j, nil
}

// value is the record this job writes in state st.
func (j *job) value(st State, worker string) value {
	return value{State: st, Seq: j.d.Seq, Hash: j.hash, Worker: worker, Fence: j.cl.fence, Deliveries: j.d.Deliveries, Key: keepKey(j.d), Spec: j.d.KeySpec,
		StreamCreated: stamp(j.streamCreated), ConsumerCreated: stamp(j.consumerCreated)}
}

// doneValue is j's done record: kept for the retention, which it names.
func (s *Store) doneValue(j *job) []byte {
	v := j.value(StateDone, s.worker)
	v.Retention = int64(s.doneTTL() / time.Second)
	return v.encode()
}

// claimMsg is the write that claims j's record over revision rev.
func (s *Store) claimMsg(j *job, rev uint64, lease time.Duration) []byte {
	v := j.value(StateClaim, s.worker)
	v.Fence = 0
	v.Expires = time.Now().Add(lease).UnixNano()
	return v.encode()
}

// errCorrupt is a record that does not read; rev is its revision, so a
// failed record may replace it once the message fails for good.
type errCorrupt struct {
	err error
	rev uint64
}

func (e *errCorrupt) Error() string { return e.err.Error() }
func (e *errCorrupt) Unwrap() error { return e.err }

// claimRecord takes the record of j's key. It returns nil and sets j.cl
// when the claim is ours, or the record found there (another worker's live
// claim, or a done record).
//
// A claim is written with "expected last revision 0" and a per-record TTL
// (the lease), so it succeeds only when the key has no message at all. When
// the key's last message is a marker (released, forgotten, or a lease that
// ran out on the server: a dead worker's claim expiring), the claim replaces
// it by compare-and-set on the marker's revision. A failed record is taken
// over the same way.
func (s *Store) claimRecord(ctx context.Context, j *job, lease time.Duration) (*Record, error) {
	var rev uint64
	for attempt := 0; attempt < 5; attempt++ {
		sent := time.Now()
		nrev, err := s.publish(ctx, j.kvKey, s.claimMsg(j, rev, lease), rev, lease)
		if err == nil {
			j.cl = claim{rev: nrev, fence: nrev, sent: sent, tookOver: j.cl.tookOver}
			return nil, nil
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return nil, jsutil.Wrap(err, "claim ack record %q in bucket %q", j.kvKey, s.bucket)
		}
		e, gerr := s.leaderGet(ctx, j.kvKey)
		switch {
		case e.marker:
			rev, j.prev = e.rev, nil // released or expired: claim over the marker
			continue
		case isNotFound(gerr):
			rev, j.prev = 0, nil // gone meanwhile
			continue
		case gerr != nil:
			return nil, fmt.Errorf("claim ack record %q: %w", j.kvKey, gerr)
		}
		r, err := s.valueRecord(j.kvKey, e.value, e.rev, e.created)
		if err != nil {
			return nil, &errCorrupt{err: err, rev: e.rev}
		}
		if r.State == StateClaim {
			why, expired := claimProblem(r, lease, time.Now())
			j.res.ClaimProblem = why
			if expired {
				rev, j.prev = r.Revision, nil // claim over it, by compare-and-set
				continue
			}
		}
		if why := s.staleForJob(ctx, j, r); why != "" {
			// A record of another incarnation of the stream proves
			// nothing about this message: the claim takes its key over.
			j.res.Stale = why
			rev, j.cl.tookOver, j.prev = r.Revision, true, nil
			continue
		}
		if r.State != StateFailed || (r.DeadLetter != nil && !j.retry && (r.Seq == j.d.Seq || r.DeadLetter.Pending)) {
			return &r, nil // done, claimed, or dead-lettered (see deadLettered)
		}
		if r.Final && !j.retry && r.Seq == j.d.Seq && j.d.Deliveries > r.Deliveries {
			// This message failed for good in this consumer's lifetime
			// (a rewind delivers it afresh, from delivery 1), but its
			// terminate was lost: the run stopped in between. Finish
			// the failure rather than run it again (see deadLettered).
			return &r, nil
		}
		rev, j.cl.tookOver, j.prev = r.Revision, true, e.value
		j.failures = uint64(r.Failures)
		if r.Final {
			j.failures = 0 // run again on purpose (a rewind, a retry): count anew
		}
	}
	return nil, jsutil.Errorf(jsutil.ErrConflict, "claim ack record %q in bucket %q: too many concurrent changes", j.kvKey, s.bucket)
}

// doneMsgTTL is the TTL of done and failed records.
func (s *Store) doneTTL() time.Duration { return s.retention }

// markDone turns the claim (at revision rev) into a done record by
// compare-and-set, retried until ctx ends. When an attempt's outcome is
// unknown (no answer: a leader election, a lost connection) the record is
// read back from the leader: done with our fence means it landed; our claim
// at a newer revision (a renewal that landed unseen) is written over.
func (s *Store) markDone(ctx context.Context, j *job, rev uint64) error {
	val := s.doneValue(j)
	last := ctx.Err()
	for ctx.Err() == nil {
		actx, cancel := context.WithTimeout(ctx, writeAttempt)
		_, err := s.publish(actx, j.kvKey, val, rev, s.doneTTL())
		cancel()
		if err == nil {
			return nil
		}
		last = err
		if nrev, landed, lost := s.readBack(ctx, j, rev); landed {
			return nil
		} else if lost {
			return jsutil.Classify(jsutil.ErrConflict, fmt.Errorf("mark ack record %q done: %w", j.kvKey, ErrLeaseLost))
		} else {
			rev = nrev
		}
		select {
		case <-ctx.Done():
		case <-time.After(writeRetry):
		}
	}
	return jsutil.Wrap(last, "mark ack record %q done in bucket %q", j.kvKey, s.bucket)
}

// readBack checks, after a done write whose outcome is unknown, what the
// record holds: landed when it is done with our fence, lost when it is
// anything else but our own claim (whose revision is returned).
func (s *Store) readBack(ctx context.Context, j *job, rev uint64) (uint64, bool, bool) {
	actx, cancel := context.WithTimeout(ctx, writeAttempt)
	defer cancel()
	e, err := s.leaderGet(actx, j.kvKey)
	if isNotFound(err) {
		return rev, false, true
	}
	if err != nil {
		return rev, false, false // unknown: try again
	}
	r, err := s.valueRecord(j.kvKey, e.value, e.rev, e.created)
	switch {
	case err != nil:
		return rev, false, true
	case r.State == StateDone && r.Fence == j.cl.fence:
		return rev, true, false
	case r.State == StateClaim && r.Fence == j.cl.fence:
		return r.Revision, false, false
	}
	return rev, false, true
}

// release purges the claim at revision rev, so the message can be claimed
// again at once (otherwise the lease would have to run out first).
func (s *Store) release(ctx context.Context, j *job, rev uint64) {
	_ = s.purge(ctx, j.kvKey, rev)
}

// giveBack undoes j's claim after its handler was stopped (see
// ErrStopped): the failed record it took over is written back as it was
// (its count of failures kept) when the message had failed before or this
// is a Retry; otherwise the claim is purged, so the next delivery claims
// it at once. Both are compare-and-sets on the claim's revision.
func (s *Store) giveBack(ctx context.Context, j *job) {
	if j.prev != nil && (j.failures > 0 || j.retry) {
		if _, err := s.publish(ctx, j.kvKey, j.prev, j.cl.rev, s.doneTTL()); err == nil {
			return
		}
	}
	s.release(ctx, j, j.cl.rev)
}

// keepFailed writes a failed record over revision rev (our claim, or a
// corrupt record), kept for the retention: the reason, the count of
// failures, and whether the message failed for good.
func (s *Store) keepFailed(ctx context.Context, j *job, rev uint64, reason string, failures uint64, final bool) error {
	_, err := s.publish(ctx, j.kvKey, s.failedValue(j, reason, failures, final).encode(), rev, s.doneTTL())
	return err
}

// failedValue is j's failed record (kept for the retention, which it names).
func (s *Store) failedValue(j *job, reason string, failures uint64, final bool) value {
	v := j.value(StateFailed, s.worker)
	v.Reason, v.Failures, v.Final = reason, failures, final
	v.Retention = int64(s.doneTTL() / time.Second)
	return v
}
