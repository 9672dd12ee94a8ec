package acks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Consume's part of the dead-letter protocol (see deadletter.go): the
// checks as it starts, its sweeps, and the messages the server reports
// giving up on.

// checkDeadLetter checks, as Consume starts, that a stream captures the
// dead-letter subject and that it is not the consumer's own (its dead
// letters would come back to it). It returns a warning when the stream's
// duplicate window looks too short to cover a crash.
func (l *loop) checkDeadLetter(ctx context.Context) (string, error) {
	subj := l.c.deadLetter
	if subj == "" {
		return "", nil
	}
	name, err := l.s.js.StreamNameBySubject(ctx, subj)
	if errors.Is(err, jetstream.ErrStreamNotFound) || (err == nil && name == "") {
		return "", jsutil.Errorf(jsutil.ErrNotFound, "no stream captures the dead-letter subject %q: create one first (for example: nats stream add DEAD --subjects %q --dupe-window 1h)", subj, subj)
	}
	if err != nil {
		return fmt.Sprintf("could not check the stream of dead-letter subject %q: %v", subj, err), nil
	}
	if name == l.stream && matchAny(consumerFilters(l.info.Config), subj) {
		return "", jsutil.Errorf(jsutil.ErrBadInput, "dead-letter subject %q is in stream %q, which consumer %q reads: its dead letters would come back to it (choose a subject of another stream)", subj, name, l.name)
	}
	st, err := l.s.js.Stream(ctx, name)
	if err != nil {
		return "", nil
	}
	if w, need := st.CachedInfo().Config.Duplicates, l.ackWait+2*l.c.lease; w < need {
		return fmt.Sprintf("dead-letter stream %q keeps message IDs for %v: a crash before a dead letter is recorded is covered only if the message comes back within that window (the ack wait and two leases take %v); a longer --dupe-window is safer", name, w, need), nil
	}
	return "", nil
}

// sweep finishes the messages stopped workers left on their last allowed
// deliveries in the scope (see SweepDeadLetters). A consumer without a max
// deliver has no last delivery: nothing to sweep.
func (l *loop) sweep(ctx context.Context) {
	if l.c.maxDeliver <= 0 || ctx.Err() != nil {
		return
	}
	sw, err := l.s.SweepDeadLetters(ctx, l.c.scope, l.c.lease, l.c.deadLetter)
	if err == nil {
		l.swept(sw.Published)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.warnLocked("could not sweep the dead-letter watches of scope " + ScopeDisplay(l.c.scope) + ": " + err.Error())
		return
	}
	l.sum.DeadLettered += sw.Published
	for _, n := range sw.Notes {
		l.warnLocked(n)
	}
}

// maxDeliveriesAdvisory is the part of the server's advisory
// (io.nats.jetstream.advisory.v1.max_deliver) that names the message.
type maxDeliveriesAdvisory struct {
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
}

// watchAdvisories listens, while the run lasts, for the server giving up
// on a message (its MaxDeliver advisory): such a message is watched and
// swept (noteGivenUp), even when the delivery that used its last allowed
// one went to a run that died before writing a watch. It returns a stop
// function; without permission to subscribe it does nothing.
func (l *loop) watchAdvisories() func() {
	if l.c.maxDeliver <= 0 {
		return func() {}
	}
	subj := "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + l.stream + "." + l.name
	sub, err := l.s.js.Conn().Subscribe(subj, func(m *nats.Msg) {
		var a maxDeliveriesAdvisory
		if json.Unmarshal(m.Data, &a) == nil && a.StreamSeq > 0 {
			l.mu.Lock()
			l.givenUp = append(l.givenUp, a)
			l.mu.Unlock()
		}
	})
	if err != nil {
		return func() {}
	}
	return func() { _ = sub.Unsubscribe() }
}

// noteGivenUp watches the messages the server gave up on since the last
// call, unless their record is settled, and sweeps when there were any.
func (l *loop) noteGivenUp(ctx context.Context) {
	l.mu.Lock()
	given := l.givenUp
	l.givenUp = nil
	l.mu.Unlock()
	if len(given) == 0 {
		return
	}
	c := &l.c.processConfig
	for _, a := range given {
		j, err := l.s.storedJob(ctx, storedRef{stream: l.stream, consumer: l.name, scope: c.scope, seq: a.StreamSeq, deliveries: a.Deliveries})
		if err != nil || !matchAny(c.subjects, j.d.Subject) {
			continue // gone from the stream, or without a record (at least once)
		}
		k := c.deriveKey(j.msg, j.d.Subject, j.d.Seq)
		j.d.KeyFrom, j.d.Key, j.d.KeySpec = k.kind, k.key, k.spec
		j.kvKey = recordKey(c.scope, k.kind, k.key)
		if r, err := l.s.getKV(ctx, j.kvKey); err == nil && (r.State == StateDone || r.Final) {
			continue // settled
		}
		last := *c
		last.maxDeliver = int(max(j.d.Deliveries, 1)) // its deliveries are over
		l.s.watchLastDelivery(ctx, j, &last)
	}
	l.sweep(ctx)
}
