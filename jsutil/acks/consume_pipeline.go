package acks

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The pipeline of Consume around the workers: claims made as messages are
// fetched, and done writes confirmed after the worker has moved on.

func (l *loop) enqueue(msg jetstream.Msg) {
	j, err := l.s.prepare(msg, &l.c.processConfig)
	l.mu.Lock()
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

// pendingDone is a done write in flight; token names its reply.
type pendingDone struct {
	j     *job
	token uint64
	sent  time.Time
}

// doneAsync publishes j's done record (a compare-and-set on its claim)
// without waiting; the completer acks the message once the write is
// confirmed, and the worker takes its next message meanwhile. The writes
// in flight are bounded by the unsettled messages (see run): completions
// has room for all of them, so this never blocks. The reply comes to the
// run's own inbox, which the connection's reader hands straight to the
// completer (see awaitReply).
func (l *loop) doneAsync(work context.Context, j *job) {
	m := l.s.kvMsg(j.kvKey, l.s.doneValue(j), j.cl.rev, l.s.doneTTL())
	l.mu.Lock()
	l.doneToken++
	tok := l.doneToken
	l.mu.Unlock()
	m.Reply = l.inbox + strconv.FormatUint(tok, 36)
	sent := time.Now()
	send := l.s.js.Conn().PublishMsg
	if l.s.sendDone != nil {
		send = l.s.sendDone
	}
	if err := send(m); err != nil {
		l.s.finishDone(work, j, &l.c.processConfig) // the synchronous path, with its retries
		l.finish(j)
		return
	}
	l.completions <- &pendingDone{j: j, token: tok, sent: sent}
}

// complete waits for done writes in the order they were sent, acks each
// message whose write is confirmed, and hands the others to the
// synchronous path (retries, read-back), which decides.
func (l *loop) complete(work context.Context) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	early := map[uint64]*nats.Msg{}
	for p := range l.completions {
		t.Reset(max(writeAttempt-time.Since(p.sent), time.Millisecond))
		if stored(l.awaitReply(p.token, early, t.C)) {
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

// awaitReply returns the reply to the done write named token, or nil when
// none came before timeout. Replies to other writes that come first are
// kept in early for their turn; a late one (its write already handed to
// the synchronous path) is dropped once early grows.
func (l *loop) awaitReply(token uint64, early map[uint64]*nats.Msg, timeout <-chan time.Time) *nats.Msg {
	if m, ok := early[token]; ok {
		delete(early, token)
		return m
	}
	for {
		select {
		case m := <-l.replies:
			got, err := strconv.ParseUint(strings.TrimPrefix(m.Subject, l.inbox), 36, 64)
			if err != nil {
				continue
			}
			if got == token {
				return m
			}
			if len(early) >= cap(l.replies) {
				for k := range early {
					if k < token {
						delete(early, k)
					}
				}
			}
			early[got] = m
		case <-timeout:
			return nil
		}
	}
}

// stored reports whether m is the server's confirmation that a write was
// stored (not an error, nor a status such as 503, no responders).
func stored(m *nats.Msg) bool {
	if m == nil || len(m.Data) == 0 {
		return false
	}
	var a struct {
		Seq   uint64          `json:"seq"`
		Error json.RawMessage `json:"error"`
	}
	return json.Unmarshal(m.Data, &a) == nil && a.Error == nil && a.Seq > 0
}
