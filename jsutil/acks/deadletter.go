package acks

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go"
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
//
// This file fails messages for good and publishes their dead letters;
// deadletter_watch.go writes and removes the watches, deadletter_sweep.go
// sweeps them, and consume_deadletter.go is Consume's part (the checks as
// it starts, its sweeps, the server's MaxDeliver advisories).

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
		if why := deadLetterProblem(dl.Subject, c.deadLetter); why != "" {
			// Nothing read back is used as a subject: the record is
			// left pending for acks retry, the message for later.
			j.res.DeadLetterRefused = fmt.Sprintf("ack record %q of message %d %s: its pending dead letter was not published (jsctl acks retry runs the message again)", j.kvKey, j.d.Seq, why)
			j.res.Err = jsutil.Errorf(jsutil.ErrConflict, "message %d of stream %q failed for good; %s", j.d.Seq, j.d.Stream, j.res.DeadLetterRefused)
			j.res.Retry = backoff(c.retryDelay, j.d.Deliveries)
			_ = j.msg.NakWithDelay(j.res.Retry)
			return
		}
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
	v.StreamCreated, v.ConsumerCreated = stampPtr(r.StreamCreated), stampPtr(r.ConsumerCreated)
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

// deadLetterProblem says why subject, the dead-letter subject a record (or
// a watch) names, is not one to publish to for a run whose own dead-letter
// subject is own, or "": a dead letter goes only to the run's own subject
// (--dead-letter), which was checked as the run started; a record naming
// another was written by another run, or by hand.
func deadLetterProblem(subject, own string) string {
	if p := jsutil.RecordedSubjectProblem("its dead-letter subject", subject); p != "" {
		return "names a dead letter that cannot be published: " + p
	}
	if own == "" {
		return fmt.Sprintf("names dead-letter subject %q, and this run has no dead-letter subject", subject)
	}
	if subject != own {
		return fmt.Sprintf("names dead-letter subject %q, not this run's %q", subject, own)
	}
	return ""
}
