package acks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// Sweep is what SweepDeadLetters did.
type Sweep struct {
	// Published counts dead letters published (or found published and
	// recorded) for messages whose worker stopped.
	Published int
	// Settled counts watches removed because their message was settled.
	Settled int
	// Notes say what happened to each message that needed it.
	Notes []string
}

// SweepDeadLetters finishes the dead letters of messages on their last
// allowed deliveries that workers left behind in scope (see the protocol
// in deadletter.go; Consume calls it as it starts and once per lease): it
// acts on a message only once its consumer will not deliver it again (see
// gaveUp). lease bounds its writes. deadLetter is the run's own dead-letter
// subject: a watch or record naming another is noted and left alone (see
// deadLetterProblem), and one naming a subject that cannot be published to
// is finished without a dead letter.
func (s *Store) SweepDeadLetters(ctx context.Context, scope string, lease time.Duration, deadLetter string) (Sweep, error) {
	if err := CheckScope(scope); err != nil {
		return Sweep{}, err
	}
	var es []watchEntry
	err := s.scan(ctx, watchPrefix+scope+".*", func(e jetstream.KeyValueEntry) error {
		es = append(es, watchEntry{e.Key(), e.Value(), e.Created()})
		return nil
	})
	if err != nil {
		return Sweep{}, err
	}
	p := &sweeper{s: s, scope: scope, lease: lease, own: deadLetter, floors: map[string]uint64{}}
	for _, e := range es {
		p.one(ctx, e)
	}
	return p.sw, nil
}

// watchEntry is a watch as the scan read it.
type watchEntry struct {
	key     string
	val     []byte
	created time.Time
}

// sweeper is one pass of SweepDeadLetters over a scope's watches.
type sweeper struct {
	s     *Store
	scope string
	lease time.Duration
	own   string // the run's dead-letter subject
	// floors: stream/consumer → the sequence up to which the consumer
	// settled every message, read once per pass (see gaveUp).
	floors map[string]uint64
	sw     Sweep
}

// watched is a watch being swept, with its message's record.
type watched struct {
	key  string // the watch's
	w    watchValue
	rkey string  // the record's
	rec  *Record // nil when there is none
	rev  uint64  // the record's revision, or its marker's (0: none)
}

// one sweeps one watch: it is removed once its message is settled, kept
// while the message may still be delivered or its record is claimed, and
// otherwise the message fails for good (finish).
func (p *sweeper) one(ctx context.Context, e watchEntry) {
	m := &watched{key: e.key, rkey: recordPrefix + strings.TrimPrefix(e.key, watchPrefix)}
	if json.Unmarshal(e.val, &m.w) != nil || m.w.Seq == 0 {
		p.drop(ctx, m)
		return
	}
	if !p.readRecord(ctx, m) {
		return
	}
	switch p.verdict(ctx, m, e.created) {
	case watchKeep:
		return
	case watchFinish:
		if !p.finish(ctx, m) {
			return // try again at the next sweep
		}
	}
	p.drop(ctx, m)
}

func (p *sweeper) drop(ctx context.Context, m *watched) {
	_ = p.s.kv.Purge(ctx, m.key, jetstream.PurgeTTL(p.s.markerTTL))
}

func (p *sweeper) note(format string, args ...any) {
	p.sw.Notes = append(p.sw.Notes, fmt.Sprintf(format, args...))
}

// readRecord reads the record m watches over from the bucket's leader; it
// returns false when it cannot be read now (try again later) or is corrupt
// (its deliveries deal with it).
func (p *sweeper) readRecord(ctx context.Context, m *watched) bool {
	le, err := p.s.leaderGet(ctx, m.rkey)
	if isNotFound(err) {
		m.rev = le.rev // a marker's, or 0
		return true
	}
	if err != nil {
		return false
	}
	r, err := p.s.valueRecord(m.rkey, le.value, le.rev, le.created)
	if err != nil {
		return false
	}
	m.rec, m.rev = &r, r.Revision
	return true
}

// What a sweep does with a watch.
type watchVerdict int

const (
	watchKeep   watchVerdict = iota // the message is not settled yet: keep it
	watchDrop                       // nothing (more) to do: remove it
	watchFinish                     // the message failed for good: finish it
)

// verdict decides what to do with m, whose watch was written at created.
func (p *sweeper) verdict(ctx context.Context, m *watched, created time.Time) watchVerdict {
	rec := m.rec
	switch {
	case rec != nil && rec.State == StateClaim:
		return watchKeep // a live worker, or a lease not yet run out
	case rec != nil && rec.State == StateDone,
		rec != nil && rec.Final && (rec.DeadLetter == nil || !rec.DeadLetter.Pending):
		p.sw.Settled++
		return watchDrop
	case rec == nil && !created.IsZero() && time.Since(created) >= p.s.doneTTL():
		// A watch lives no longer than the records it watches over (see
		// watchLastDelivery); one written without that TTL has outlived
		// them, so whatever record its message had is gone: a done record
		// looks no different from a dead worker's claim now. Record
		// nothing rather than a failure that may not have happened.
		p.note("message %d of stream %q: its last-delivery watch outlived the records' retention (%s); its outcome is no longer known and nothing was recorded",
			m.w.Seq, m.w.Stream, p.s.doneTTL())
		return watchDrop
	case rec == nil || !rec.Final:
		if gone, err := p.s.gaveUp(ctx, m.w, p.floors); err != nil || !gone {
			return watchKeep // it may still be delivered: its delivery decides
		}
	}
	return watchFinish
}

// finish ends m's message, which failed for good: a final failed record
// and, when the watch names a subject, its dead letter (or only the dead
// letter, when a final record names it pending). It reports whether the
// watch is done with.
func (p *sweeper) finish(ctx context.Context, m *watched) bool {
	w := m.w
	subject := w.Subject
	if m.rec != nil && m.rec.Final && m.rec.DeadLetter != nil {
		subject = m.rec.DeadLetter.Subject
	}
	if subject != "" {
		why := deadLetterProblem(subject, p.own)
		switch {
		case why != "" && jsutil.RecordedSubjectProblem("", subject) == "":
			// Another run's subject: that run sweeps it.
			p.note("message %d of stream %q: its last-delivery watch %s: left for a run with that --dead-letter (or jsctl acks retry)", w.Seq, w.Stream, why)
			return false
		case why != "":
			p.note("message %d of stream %q: its last-delivery watch %s; finished without a dead letter", w.Seq, w.Stream, why)
			subject, w.Subject = "", ""
			if m.rec != nil && m.rec.Final {
				return true // its record stays as it is, for acks retry
			}
		}
	}
	c := &processConfig{deadLetter: subject, lease: p.lease}
	j, err := p.s.storedJob(ctx, storedRef{stream: w.Stream, consumer: w.Consumer, scope: p.scope, kvKey: m.rkey, seq: w.Seq,
		deliveries: w.Deliveries, key: w.Key, kind: w.KeyFrom, spec: w.Spec})
	switch {
	case err != nil && errors.Is(err, jsutil.ErrNotFound):
		return p.gone(ctx, m, j, c, err)
	case err != nil:
		return false
	}
	if m.rec != nil && m.rec.Final { // a pending dead letter
		if p.s.sendDeadLetter(ctx, j, m.rec.value(), m.rec.Revision) != nil {
			return false
		}
	} else {
		reason := lastDeliveryLost
		if m.rec != nil {
			reason += "; it had failed: " + m.rec.Reason
		}
		if !p.s.failForGood(ctx, j, c, m.rev, reason, max(uint64(1), failuresOf(m.rec)+1)) {
			return false
		}
	}
	if w.Subject == "" {
		p.note("message %d of stream %q: its last allowed delivery ended without an outcome; a final failed record is kept", w.Seq, w.Stream)
		return true
	}
	p.sw.Published++
	p.note("message %d of stream %q: its last allowed delivery ended without an outcome; dead-lettered as message %d of stream %q",
		w.Seq, w.Stream, j.res.DeadLetterSeq, j.res.DeadLetterStream)
	return true
}

// gone finishes a message its stream no longer holds (err says why): it
// cannot be dead-lettered, and a final failed record says so unless one
// is there already.
func (p *sweeper) gone(ctx context.Context, m *watched, j *job, c *processConfig, err error) bool {
	if m.rec == nil || !m.rec.Final {
		c.deadLetter = ""
		reason := fmt.Sprintf("%s; not dead-lettered: %v", lastDeliveryLost, err)
		if !p.s.failForGood(ctx, j, c, m.rev, reason, m.w.Deliveries) {
			return false
		}
	}
	p.note("message %d of stream %q could not be dead-lettered: %v", m.w.Seq, m.w.Stream, err)
	return true
}

// gaveUp reports whether w's consumer will not deliver w's message again:
// its ack floor has passed it, or it has delivered it and has nothing
// awaiting an ack or a redelivery (a message the server gave up on leaves
// its pending set without moving the ack floor). A consumer that no longer
// exists never will.
func (s *Store) gaveUp(ctx context.Context, w watchValue, floors map[string]uint64) (bool, error) {
	id := w.Stream + "/" + w.Consumer
	settled, ok := floors[id] // every message up to it is settled for the consumer
	if !ok {
		cons, err := s.js.Consumer(ctx, w.Stream, w.Consumer)
		switch {
		case errors.Is(err, jetstream.ErrConsumerNotFound), errors.Is(err, jetstream.ErrStreamNotFound):
			settled = ^uint64(0)
		case err != nil:
			return false, err
		default:
			info := cons.CachedInfo()
			settled = info.AckFloor.Stream
			if info.NumAckPending == 0 {
				settled = max(settled, info.Delivered.Stream)
			}
		}
		floors[id] = settled
	}
	return settled >= w.Seq, nil
}

// lastDeliveryLost is the reason a sweep gives for a message whose last
// allowed delivery left no outcome.
const lastDeliveryLost = "its last allowed delivery ended without an outcome (the consumer will not deliver it again): the worker stopped, or its record could not be written"

func failuresOf(rec *Record) uint64 {
	if rec == nil {
		return 0
	}
	return uint64(rec.Failures)
}
