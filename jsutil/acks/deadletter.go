package acks

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Dead letters (WithDeadLetter). A message that fails for good is published
// to the dead-letter subject with its payload and headers (headers starting
// with "Nats-", which would direct the server, are kept renamed
// "Jsctl-Original-Nats-..."), plus the headers below, under a Nats-Msg-Id
// so that the stream that captures the subject drops a second copy within
// its duplicate window.
//
// The order of the steps makes a crash (kill -9) at any moment neither
// lose a dead letter nor publish one twice:
//
//  1. the claim becomes a final failed record naming the dead letter's
//     subject and ID, "pending" (compare-and-set on the claim);
//  2. the message is published to the subject with that ID;
//  3. the record is updated with the dead letter's stream and sequence
//     (compare-and-set);
//  4. the message is terminated.
//
// A crash before 1 leaves a claim that runs out: the message is redelivered
// and runs again (nothing was published). After 1, the message is not yet
// terminated, so it comes back: a delivery that finds a pending record
// publishes it again under the same ID (the stream drops the copy if the
// first publish landed, and answers with the first one's sequence, which
// is checked: see deadletter_id.go), records it and terminates the
// message; one that finds it published only
// terminates. No handler runs for a dead-lettered message again unless Retry
// runs it on purpose (or its record is forgotten). Two workers finishing the
// same record publish the same ID and only one record update wins.
//
// A message on its last allowed deliveries (the consumer's MaxDeliver)
// may not come back after a crash: the server gives up on it. So as a
// redelivered message (or one on its last two allowed deliveries) is
// fetched, a watch record "d.<scope>.<dedup>" names it, and while Consume runs it also
// watches the messages the server reports giving up on (its MaxDeliver
// advisory). Consume sweeps the watches of its scope as it starts and once
// per lease: a watch whose record is settled is removed; a pending dead
// letter is published from the message as the stream holds it; a message
// with no outcome (no record, or a failed one that is not final) and no
// live claim, which its consumer will not deliver again (its ack floor
// passed it, or nothing awaits an ack or redelivery), fails for good, with
// the reason saying so: a final failed record, and a dead letter when the
// watch names a subject. Watches are kept whether or not a dead-letter
// subject is set: without the final failed record, the consumer's floor
// would pass the message as handled. The one crash this cannot cover:
// jsctl killed, on every redelivery of a message, between receiving it and
// sending its watch, with no run alive when the server gives up on it.

// Headers of a dead letter.
const (
	DeadLetterStreamHdr     = "Jsctl-Stream"
	DeadLetterConsumerHdr   = "Jsctl-Consumer"
	DeadLetterScopeHdr      = "Jsctl-Scope"
	DeadLetterSeqHdr        = "Jsctl-Sequence"
	DeadLetterSubjectHdr    = "Jsctl-Subject"
	DeadLetterTimeHdr       = "Jsctl-Time" // RFC 3339, UTC, nanoseconds
	DeadLetterKeyHdr        = "Jsctl-Key"  // escaped as JSCTL_KEY is; the raw bytes in Jsctl-Key-B64
	DeadLetterKeyB64Hdr     = "Jsctl-Key-B64"
	DeadLetterKeySpecHdr    = "Jsctl-Key-Spec"
	DeadLetterDeliveriesHdr = "Jsctl-Deliveries"
	DeadLetterFailuresHdr   = "Jsctl-Failures"
	DeadLetterErrorHdr      = "Jsctl-Error" // the last error, at most 1 KiB, on one line
	// DeadLetterOriginalPrefix renames the message's own Nats-* headers.
	DeadLetterOriginalPrefix = "Jsctl-Original-"
)

const watchPrefix = "d."

// failForGood ends a message that failed for good: a final failed record
// over revision rev (naming a pending dead letter with WithDeadLetter), the
// dead letter, then the terminate. It returns false, leaving the message to
// be nak'd by the caller, when the record could not be written (never
// terminate without a record) or the dead letter is still pending.
func (s *Store) failForGood(ctx context.Context, j *job, c *processConfig, rev uint64, reason string, failures uint64) bool {
	actx, cancel := after(ctx, c)
	defer cancel()
	v := s.failedValue(j, reason, failures, true)
	if c.deadLetter != "" {
		v.DLSubject, v.DLID = c.deadLetter, s.deadLetterID(rev)
	}
	j.res.Failures = failures
	nrev, err := s.publish(actx, j.kvKey, v.encode(), rev, s.doneTTL())
	if err != nil {
		j.res.Err = joinErr(j.res.Err, jsutil.Wrap(err, "keep failed ack record %q in bucket %q", j.kvKey, s.bucket))
		return false
	}
	if v.DLSubject != "" {
		if err := s.sendDeadLetter(actx, j, v, nrev); err != nil {
			j.res.Err = joinErr(j.res.Err, err)
			return false
		}
	}
	s.terminate(j, reason)
	s.dropWatch(actx, j)
	return true
}

func joinErr(first, then error) error {
	if first == nil {
		return then
	}
	return fmt.Errorf("%w; %w", first, then)
}

// failWithoutRecord ends a message that failed for good and has no record
// of its own (outside the idempotent subjects, a duplicate run, a
// mismatch): it is dead-lettered under an ID made of its stream, consumer
// and sequence (the stream's duplicate window is all that keeps a second
// copy out), then terminated. It returns false when the dead letter could
// not be published.
func (s *Store) failWithoutRecord(ctx context.Context, j *job, c *processConfig, reason string) bool {
	if c.deadLetter != "" {
		actx, cancel := after(ctx, c)
		defer cancel()
		v := value{Seq: j.d.Seq, Deliveries: j.d.Deliveries, Failures: j.res.Failures, Reason: reason, Spec: j.d.KeySpec,
			DLSubject: c.deadLetter, DLID: "jsctl-dl:" + j.d.Stream + ":" + j.d.Consumer + ":" + strconv.FormatUint(j.d.Seq, 10)}
		ack, err := s.publishDeadLetter(actx, deadLetterMsg(j, v))
		if err != nil {
			j.res.Err = joinErr(j.res.Err, dlErr(err, j, v))
			return false
		}
		j.res.DeadLetterStream, j.res.DeadLetterSeq, j.res.DeadLettered = ack.Stream, ack.Sequence, true
	}
	s.terminate(j, reason)
	return true
}

func dlErr(err error, j *job, v value) error {
	return jsutil.Wrap(err, "publish the dead letter of message %d of stream %q to %q (it stays pending)", j.d.Seq, j.d.Stream, v.DLSubject)
}

// sendDeadLetter publishes the dead letter v names (steps 2 and 3 of the
// protocol) and records its sequence over revision rev of j's record.
func (s *Store) sendDeadLetter(ctx context.Context, j *job, v value, rev uint64) error {
	ack, err := s.publishDeadLetter(ctx, deadLetterMsg(j, v))
	if err != nil {
		return dlErr(err, j, v)
	}
	v.DLStream, v.DLSeq = ack.Stream, ack.Sequence
	if _, err := s.publish(ctx, j.kvKey, v.encode(), rev, s.doneTTL()); err != nil {
		cur, gerr := s.getKV(ctx, j.kvKey)
		if gerr != nil || cur.DeadLetter == nil || cur.DeadLetter.Pending || cur.DeadLetter.ID != v.DLID {
			return jsutil.Wrap(err, "record the dead letter of message %d in ack record %q", j.d.Seq, j.kvKey)
		}
		// Another worker recorded the same dead letter.
	}
	j.res.DeadLetterStream, j.res.DeadLetterSeq, j.res.DeadLettered = ack.Stream, ack.Sequence, true
	return nil
}

// deadLettered handles a delivery that finds a failed record that ends
// it: a dead-lettered one (claimRecord hands over only those of this very
// message, and pending ones of another message under the key), or a final
// one of this very message delivered again since (its terminate was lost).
func (s *Store) deadLettered(ctx context.Context, j *job, c *processConfig, rec *Record) {
	dl := rec.DeadLetter
	if rec.Seq != j.d.Seq {
		// Another message's dead letter is pending under this key: its next
		// delivery or a sweep finishes it; come back then.
		j.res.Action, j.res.Retry = Busy, s.busyDelay(c, time.Time{})
		_ = j.msg.NakWithDelay(j.res.Retry)
		return
	}
	j.res.Action, j.res.Failures = Failed, uint64(rec.Failures)
	if dl == nil {
		// Failed for good without a dead letter; its terminate was lost.
		j.res.Err = fmt.Errorf("message %d of stream %q failed for good (%s)", j.d.Seq, j.d.Stream, rec.Reason)
		s.terminate(j, rec.Reason)
		s.dropWatch(ctx, j)
		return
	}
	if dl.Pending {
		actx, cancel := after(ctx, c)
		defer cancel()
		if err := s.sendDeadLetter(actx, j, rec.value(), rec.Revision); err != nil {
			j.res.Err = err
			j.res.Retry = backoff(c.retryDelay, j.d.Deliveries)
			_ = j.msg.NakWithDelay(j.res.Retry)
			return
		}
	} else {
		j.res.DeadLetterStream, j.res.DeadLetterSeq = dl.Stream, dl.Seq
	}
	j.res.Err = fmt.Errorf("message %d of stream %q failed for good (%s) and was dead-lettered as message %d of stream %q",
		j.d.Seq, j.d.Stream, rec.Reason, j.res.DeadLetterSeq, j.res.DeadLetterStream)
	s.terminate(j, "dead-lettered")
	s.dropWatch(ctx, j)
}

// value is the stored form of a record read back.
func (r Record) value() value {
	v := value{State: r.State, Seq: r.Seq, Hash: r.Hash, Worker: r.Worker, Fence: r.Fence, Deliveries: r.Deliveries,
		Reason: r.Reason, Failures: uint64(r.Failures), Final: r.Final, Spec: r.KeySpec, Retention: int64(r.Retention / time.Second)}
	if hashedKey(r.KeyFrom, r.Key) {
		v.Key = r.Key
	}
	if dl := r.DeadLetter; dl != nil {
		v.DLSubject, v.DLID, v.DLStream, v.DLSeq = dl.Subject, dl.ID, dl.Stream, dl.Seq
	}
	return v
}

// deadLetterMsg builds the dead letter of j as v describes it.
func deadLetterMsg(j *job, v value) *nats.Msg {
	m := nats.NewMsg(v.DLSubject)
	m.Data = j.msg.Data()
	for k, vals := range j.msg.Headers() {
		name := k
		if strings.HasPrefix(strings.ToLower(k), "nats-") {
			name = DeadLetterOriginalPrefix + k
		}
		m.Header[name] = append([]string(nil), vals...)
	}
	d := j.d
	set := func(k, val string) { m.Header.Set(k, headerText(val, 1024)) }
	set(DeadLetterStreamHdr, d.Stream)
	set(DeadLetterConsumerHdr, d.Consumer)
	if d.Scope != "" {
		set(DeadLetterScopeHdr, ScopeDisplay(d.Scope))
	}
	set(DeadLetterSeqHdr, strconv.FormatUint(d.Seq, 10))
	set(DeadLetterSubjectHdr, d.Subject)
	set(DeadLetterTimeHdr, d.Time.UTC().Format(time.RFC3339Nano))
	m.Header.Set(DeadLetterKeyHdr, headerText(d.Key, 4096))
	m.Header.Set(DeadLetterKeyB64Hdr, base64.StdEncoding.EncodeToString([]byte(d.Key)))
	set(DeadLetterKeySpecHdr, d.KeySpec)
	set(DeadLetterDeliveriesHdr, strconv.FormatUint(v.Deliveries, 10))
	set(DeadLetterFailuresHdr, strconv.FormatUint(max(v.Failures, 1), 10))
	set(DeadLetterErrorHdr, v.Reason)
	m.Header.Set(nats.MsgIdHdr, v.DLID)
	return m
}

// headerText makes s safe as a header value: escaped as JSCTL_KEY is
// (jsutil.Escape), cut after about n bytes.
func headerText(s string, n int) string {
	out, cut := jsutil.Escape([]byte(s), n)
	if cut {
		out += "..."
	}
	return out
}

// watchValue is a dead-letter watch: the message on its last allowed
// delivery and what its dead letter needs.
type watchValue struct {
	Stream     string  `json:"st"`
	Consumer   string  `json:"c"`
	Seq        uint64  `json:"q"`
	Subject    string  `json:"ls"` // the dead-letter subject
	Deliveries uint64  `json:"d"`
	Key        string  `json:"k"`
	KeyFrom    KeyKind `json:"kf"`
	Spec       string  `json:"ks,omitempty"`
}

func watchKey(recordKey string) string {
	return watchPrefix + strings.TrimPrefix(recordKey, recordPrefix)
}

// watchLastDelivery writes j's watch when this is a redelivery, or one of
// its last two allowed deliveries (see the protocol above). Watches are kept
// whether or not a dead-letter subject is set: without the final failed
// record a sweep writes, the consumer's floor would pass a message the
// server gave up on as handled. Any redelivery is watched (not only the
// last two), so that a message is lost to a crash only if every one of its
// redeliveries was cut before its watch was sent; first deliveries are not
// (they would cost a write per message). The write is published without
// waiting: it leaves the process at once, and the fetcher goes on.
func (s *Store) watchLastDelivery(ctx context.Context, j *job, c *processConfig) {
	if !j.d.Idempotent || j.d.Retry || c.maxDeliver <= 0 || (j.d.Deliveries < 2 && j.d.Deliveries+1 < uint64(c.maxDeliver)) {
		return
	}
	b, _ := json.Marshal(watchValue{Stream: j.d.Stream, Consumer: j.d.Consumer, Seq: j.d.Seq, Subject: c.deadLetter,
		Deliveries: j.d.Deliveries, Key: j.d.Key, KeyFrom: j.d.KeyFrom, Spec: j.d.KeySpec})
	m := nats.NewMsg(s.subject + watchKey(j.kvKey))
	m.Data = b
	// A watch lives no longer than the records it watches over: one left
	// behind (its run stopped between the ack and the watch's removal)
	// must not outlive the done record and read as a delivery that ended
	// without an outcome.
	m.Header.Set(jetstream.MsgTTLHeader, s.doneTTL().String())
	_, err := s.js.PublishMsgAsync(m)
	j.watch = err == nil
}

// dropWatch removes j's watch once its message is settled.
func (s *Store) dropWatch(ctx context.Context, j *job) {
	if !j.watch {
		return
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeAttempt)
	defer cancel()
	if s.kv.Purge(wctx, watchKey(j.kvKey), jetstream.PurgeTTL(s.markerTTL)) == nil {
		j.watch = false
	}
}

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
// gaveUp). lease bounds its writes.
func (s *Store) SweepDeadLetters(ctx context.Context, scope string, lease time.Duration) (Sweep, error) {
	var sw Sweep
	if err := CheckScope(scope); err != nil {
		return sw, err
	}
	type entry struct {
		key     string
		val     []byte
		created time.Time
	}
	var es []entry
	err := s.scan(ctx, watchPrefix+scope+".*", func(e jetstream.KeyValueEntry) error {
		es = append(es, entry{e.Key(), e.Value(), e.Created()})
		return nil
	})
	if err != nil {
		return sw, err
	}
	floors := map[string]uint64{} // stream/consumer → ack floor, read once per sweep
	for _, e := range es {
		s.sweepOne(ctx, scope, e.key, e.val, e.created, lease, floors, &sw)
	}
	return sw, nil
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

func (s *Store) sweepOne(ctx context.Context, scope, key string, val []byte, created time.Time, lease time.Duration, floors map[string]uint64, sw *Sweep) {
	drop := func() { _ = s.kv.Purge(ctx, key, jetstream.PurgeTTL(s.markerTTL)) }
	var w watchValue
	if json.Unmarshal(val, &w) != nil || w.Seq == 0 {
		drop()
		return
	}
	rkey := recordPrefix + strings.TrimPrefix(key, watchPrefix)
	le, err := s.leaderGet(ctx, rkey)
	if err != nil && !isNotFound(err) {
		return // try again later
	}
	var rec *Record
	if err == nil {
		r, rerr := s.valueRecord(rkey, le.value, le.rev, le.created)
		if rerr != nil {
			return // a corrupt record: its deliveries deal with it
		}
		rec = &r
	}
	switch {
	case rec != nil && rec.State == StateClaim:
		return // a live worker, or a lease not yet run out
	case rec != nil && rec.State == StateDone,
		rec != nil && rec.Final && (rec.DeadLetter == nil || !rec.DeadLetter.Pending):
		sw.Settled++
		drop()
		return
	case rec == nil && !created.IsZero() && time.Since(created) >= s.doneTTL():
		// A watch lives no longer than the records it watches over (see
		// watchLastDelivery); one written without that TTL has outlived
		// them, so whatever record its message had is gone: a done record
		// looks no different from a dead worker's claim now. Record
		// nothing rather than a failure that may not have happened.
		sw.Notes = append(sw.Notes, fmt.Sprintf("message %d of stream %q: its last-delivery watch outlived the records' retention (%s); its outcome is no longer known and nothing was recorded",
			w.Seq, w.Stream, s.doneTTL()))
		drop()
		return
	case rec == nil || !rec.Final:
		if gone, err := s.gaveUp(ctx, w, floors); err != nil || !gone {
			return // it may still be delivered: its delivery decides
		}
	}
	c := &processConfig{deadLetter: w.Subject, lease: lease}
	j, err := s.storedJob(ctx, storedRef{stream: w.Stream, consumer: w.Consumer, scope: scope, kvKey: rkey, seq: w.Seq,
		deliveries: w.Deliveries, key: w.Key, kind: w.KeyFrom, spec: w.Spec})
	switch {
	case err != nil && errors.Is(err, jsutil.ErrNotFound):
		if rec == nil || !rec.Final {
			c.deadLetter = ""
			reason := fmt.Sprintf("%s; not dead-lettered: %v", lastDeliveryLost(w), err)
			if !s.failForGood(ctx, j, c, revOf(rec, le), reason, w.Deliveries) {
				return
			}
		}
		sw.Notes = append(sw.Notes, fmt.Sprintf("message %d of stream %q could not be dead-lettered: %v", w.Seq, w.Stream, err))
		drop()
		return
	case err != nil:
		return
	}
	if rec != nil && rec.Final { // a pending dead letter
		if s.sendDeadLetter(ctx, j, rec.value(), rec.Revision) != nil {
			return
		}
	} else {
		reason := lastDeliveryLost(w)
		if rec != nil {
			reason += "; it had failed: " + rec.Reason
		}
		if !s.failForGood(ctx, j, c, revOf(rec, le), reason, max(uint64(1), failuresOf(rec)+1)) {
			return
		}
	}
	if w.Subject == "" {
		sw.Notes = append(sw.Notes, fmt.Sprintf("message %d of stream %q: its last allowed delivery ended without an outcome; a final failed record is kept", w.Seq, w.Stream))
		drop()
		return
	}
	sw.Published++
	sw.Notes = append(sw.Notes, fmt.Sprintf("message %d of stream %q: its last allowed delivery ended without an outcome; dead-lettered as message %d of stream %q",
		w.Seq, w.Stream, j.res.DeadLetterSeq, j.res.DeadLetterStream))
	drop()
}

// lastDeliveryLost is the reason a sweep gives for a message whose last
// allowed delivery left no outcome.
func lastDeliveryLost(watchValue) string {
	return "its last allowed delivery ended without an outcome (the consumer will not deliver it again): the worker stopped, or its record could not be written"
}

func revOf(rec *Record, le leaderEntry) uint64 {
	if rec != nil {
		return rec.Revision
	}
	return le.rev // a marker's, or 0
}

func failuresOf(rec *Record) uint64 {
	if rec == nil {
		return 0
	}
	return uint64(rec.Failures)
}

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
	sw, err := l.s.SweepDeadLetters(ctx, l.c.scope, l.c.lease)
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
