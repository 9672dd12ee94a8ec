package acks

import (
	"context"
	"errors"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// The pipeline of Consume around the workers: claims made as messages are
// fetched, and done writes confirmed after the worker has moved on.

func (l *loop) enqueue(msg jetstream.Msg) {
	j, err := l.s.prepare(msg, &l.c.processConfig)
	l.mu.Lock()
	l.lastMsg = time.Now()
	if err == nil {
		l.active++
		l.out++
	}
	l.mu.Unlock()
	if err != nil {
		// Not a JetStream message: nothing can be acked; report it.
		l.report(j.res)
		return
	}
	if j.d.Idempotent {
		l.s.watchLastDelivery(l.fetchCtx, j, &l.c.processConfig)
		// Claim ahead: by the time a worker takes the message, its claim
		// has usually been answered (see resolveClaim).
		j.claimSent = time.Now()
		j.claimFut, _ = l.s.js.PublishMsgAsync(l.s.kvMsg(j.kvKey, l.s.claimMsg(j, 0, l.c.lease), 0, l.c.lease))
	}
	l.queue <- j
}

// resolveClaim finishes the claim of a message taken from the queue. A
// claim made ahead is used when it landed: if it waited in the queue for a
// renewal period or more, it is renewed first (so it cannot run out before
// the handler's leases take over). A claim that met a record or a marker,
// or got no answer, goes through the full claim (claimRecord).
func (l *loop) resolveClaim(ctx context.Context, j *job) (*Record, error) {
	lease := l.c.lease
	if j.claimFut == nil {
		return l.s.claimRecord(ctx, j, lease)
	}
	var err error
	t := time.NewTimer(max(writeAttempt-time.Since(j.claimSent), time.Millisecond))
	defer t.Stop()
	var ack *jetstream.PubAck
	select {
	case ack = <-j.claimFut.Ok():
	case err = <-j.claimFut.Err():
	case <-t.C:
		select { // an answer there by now wins over the timer
		case ack = <-j.claimFut.Ok():
		case err = <-j.claimFut.Err():
		default:
			err = context.DeadlineExceeded
		}
	}
	if ack != nil {
		j.cl = claim{rev: ack.Sequence, fence: ack.Sequence, sent: j.claimSent}
	}
	j.claimFut = nil
	switch {
	case err == nil && time.Since(j.cl.sent) < renewEvery(lease):
		return nil, nil
	case err == nil:
		v := j.value(StateClaim, l.s.worker)
		v.Expires = time.Now().Add(lease).UnixNano()
		sent := time.Now()
		rev, rerr := l.s.publish(ctx, j.kvKey, v.encode(), j.cl.rev, lease)
		if errors.Is(rerr, jetstream.ErrKeyRevisionMismatch) {
			// The claim made ahead ran out in the queue (its marker, or
			// another worker's claim, is there now): claim afresh.
			j.cl = claim{}
			return l.s.claimRecord(ctx, j, lease)
		}
		if rerr != nil {
			return nil, jsutil.Wrap(jsutil.RequestError(l.s.js.Conn(), l.s.subject+j.kvKey, rerr), "renew ack record %q in bucket %q", j.kvKey, l.s.bucket)
		}
		j.cl.rev, j.cl.sent = rev, sent
		return nil, nil
	case errors.Is(casErr(err), jetstream.ErrKeyRevisionMismatch):
		return l.s.claimRecord(ctx, j, lease)
	}
	// No answer: the claim may have landed, and then it runs out after the
	// lease; the message comes back then.
	return nil, jsutil.Wrap(jsutil.RequestError(l.s.js.Conn(), l.s.subject+j.kvKey, err), "claim ack record %q in bucket %q", j.kvKey, l.s.bucket)
}

// drop naks a fetched message that will not be handled in this run,
// releasing the claim made ahead for it.
func (l *loop) drop(j *job) {
	if j.claimFut != nil {
		select {
		case ack := <-j.claimFut.Ok():
			ctx, cancel := context.WithTimeout(context.Background(), writeAttempt)
			l.s.release(ctx, j, ack.Sequence)
			cancel()
		case <-j.claimFut.Err():
		case <-time.After(writeAttempt):
		}
	}
	_ = j.msg.Nak()
	l.mu.Lock()
	l.active--
	l.out--
	l.mu.Unlock()
	l.signal()
}

// pendingDone is a done write in flight.
type pendingDone struct {
	j    *job
	fut  jetstream.PubAckFuture
	sent time.Time
}

// doneAsync publishes j's done record (a compare-and-set on its claim)
// without waiting; the completer acks the message once the write is
// confirmed, and the worker takes its next message meanwhile. The writes
// in flight are bounded by the unsettled messages (see run): completions
// has room for all of them, so this never blocks.
func (l *loop) doneAsync(work context.Context, j *job) {
	val := l.s.doneValue(j)
	fut, err := l.s.js.PublishMsgAsync(l.s.kvMsg(j.kvKey, val, j.cl.rev, l.s.doneTTL()))
	if err != nil {
		l.s.finishDone(work, j, &l.c.processConfig) // the synchronous path, with its retries
		l.finish(j)
		return
	}
	l.completions <- &pendingDone{j: j, fut: fut, sent: time.Now()}
}

// complete waits for done writes in the order they were sent, acks each
// message whose write is confirmed, and hands the others to the
// synchronous path (retries, read-back), which decides.
func (l *loop) complete(work context.Context) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for p := range l.completions {
		t.Reset(max(writeAttempt-time.Since(p.sent), time.Millisecond))
		ok := false
		select {
		case <-p.fut.Ok():
			ok = true
		case <-p.fut.Err():
		case <-t.C:
		}
		if ok {
			p.j.res.Action = Processed
			p.j.res.Err = ackErr(p.j.msg.Ack(), p.j.d)
			l.s.dropWatch(work, p.j)
			l.finish(p.j)
			continue
		}
		l.fallbacks.Add(1)
		go func() {
			defer l.fallbacks.Done()
			l.s.finishDone(work, p.j, &l.c.processConfig)
			l.finish(p.j)
		}()
	}
}
