package acks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// BatchHandler handles a batch of messages at once. It returns a non-nil
// error when the whole batch failed (every message is released for
// redelivery); otherwise results[i] is the outcome of ds[i] (nil: done), or
// results is nil when every message is done.
type BatchHandler func(ctx context.Context, ds []Delivery) (results []error, err error)

// WithBatch makes ConsumeBatch hand up to n messages at once to its handler,
// waiting at most wait for a partial batch to fill (0: take what is there).
func WithBatch(n int, wait time.Duration) ConsumeOption {
	return consumeOpt(func(c *consumeConfig) { c.batch, c.batchWait = n, wait })
}

// ConsumeBatch is Consume with a handler that takes batches (WithBatch sets
// their size; default 100). Every message of a batch is claimed before the
// handler runs (the claims in flight together); messages already done are
// acked as duplicates and left out, as are busy ones. The done writes are
// pipelined and each message is acked when its own write is confirmed. A
// lost lease on any message of a running batch cancels the handler.
func (s *Store) ConsumeBatch(ctx context.Context, cons jetstream.Consumer, handler BatchHandler, opts ...ConsumeOption) (Summary, error) {
	l, err := s.newLoop(ctx, cons, opts)
	if err != nil {
		return Summary{}, err
	}
	if l.c.batch == 0 {
		l.c.batch = 100
	}
	if l.c.batchWait < 0 {
		return Summary{}, jsutil.Errorf(jsutil.ErrBadInput, "negative batch wait %v", l.c.batchWait)
	}
	l.bh = handler
	return l.run(ctx)
}

// batchWorker handles batches until the queue is closed.
func (l *loop) batchWorker(ctx, work context.Context) {
	for {
		batch := l.collect()
		if len(batch) == 0 {
			return
		}
		if ctx.Err() != nil {
			for _, j := range batch {
				l.drop(j)
			}
			continue
		}
		l.runBatch(work, batch)
	}
}

// collect takes up to the batch size from the queue: the first message
// whenever it comes, then what arrives within the batch wait.
func (l *loop) collect() []*job {
	j, ok := <-l.queue
	if !ok {
		return nil
	}
	batch := []*job{j}
	var timeout <-chan time.Time
	if l.c.batchWait > 0 {
		t := time.NewTimer(l.c.batchWait)
		defer t.Stop()
		timeout = t.C
	}
	for len(batch) < l.c.batch {
		if timeout == nil {
			select {
			case j, ok := <-l.queue:
				if !ok {
					return batch
				}
				batch = append(batch, j)
				continue
			default:
				return batch
			}
		}
		select {
		case j, ok := <-l.queue:
			if !ok {
				return batch
			}
			batch = append(batch, j)
		case <-timeout:
			return batch
		}
	}
	return batch
}

// runBatch claims every message of the batch (pipelined), runs the
// handler on those admitted, and finishes each message.
func (l *loop) runBatch(work context.Context, batch []*job) {
	c := &l.c.processConfig
	start := time.Now()
	for _, j := range batch {
		l.freshen(j)
	}
	run := l.claimAll(work, batch)
	for _, j := range batch {
		if !contains(run, j) {
			l.handled(j, start)
			l.finish(j)
		}
	}
	if len(run) == 0 {
		return
	}
	var claimed []*job
	ds := make([]Delivery, len(run))
	for i, j := range run {
		ds[i] = j.d
		if j.d.Idempotent {
			claimed = append(claimed, j)
		}
	}
	hctx, k := l.s.keepLeases(work, c.lease, claimed)
	results, err := l.callBatch(hctx, ds)
	for _, h := range k.finish() {
		h.j.cl.rev, h.j.cl.sent = h.rev, h.sent
		if h.lost {
			h.j.res.LeaseLost = true
		}
	}
	per := time.Since(start) / time.Duration(len(run))
	for _, j := range run {
		l.handled(j, time.Now().Add(-per))
	}
	for i, j := range run {
		herr := err
		if herr == nil && results != nil {
			herr = results[i]
		}
		switch {
		case j.res.LeaseLost:
			l.s.leaseLost(j, c)
		case herr != nil:
			l.s.handlerFailed(work, j, c, herr)
		case !j.d.Idempotent:
			l.s.finishDone(work, j, c)
		default:
			l.doneAsync(work, j)
			continue
		}
		l.finish(j)
	}
}

// callBatch runs the handler and checks its answer's shape.
func (l *loop) callBatch(ctx context.Context, ds []Delivery) (results []error, err error) {
	results, err = l.bh(ctx, ds)
	if err == nil && results != nil && len(results) != len(ds) {
		return nil, fmt.Errorf("batch handler returned %d results for %d messages", len(results), len(ds))
	}
	return results, err
}

// claimAll claims the records of a batch's idempotent messages, all in
// flight together, and returns the messages whose handler runs. A claim
// that cannot be made in one write (the key holds a record or a marker)
// goes through the full claim, one by one.
func (l *loop) claimAll(ctx context.Context, batch []*job) []*job {
	c := &l.c.processConfig
	type pending struct {
		j    *job
		fut  jetstream.PubAckFuture
		sent time.Time
	}
	var ps []pending
	var run []*job
	for _, j := range batch {
		if !j.d.Idempotent {
			run = append(run, j)
			continue
		}
		v := j.value(StateClaim, l.s.worker)
		v.Expires = time.Now().Add(c.lease).UnixNano()
		sent := time.Now()
		fut, err := l.s.js.PublishMsgAsync(l.s.kvMsg(j.kvKey, v.encode(), 0, c.lease))
		if err != nil {
			ps = append(ps, pending{j: j})
			continue
		}
		ps = append(ps, pending{j: j, fut: fut, sent: sent})
	}
	t := time.NewTimer(writeAttempt)
	defer t.Stop()
	for _, p := range ps {
		var dup *Record
		var err error
		claimedNow := false
		if p.fut != nil {
			select {
			case ack := <-p.fut.Ok():
				p.j.cl = claim{rev: ack.Sequence, fence: ack.Sequence, sent: p.sent}
				claimedNow = true
			case err = <-p.fut.Err():
			case <-t.C:
				err = context.DeadlineExceeded
			}
		}
		if !claimedNow {
			// Taken, a marker in the way, or no answer (the claim may have
			// landed: a retry finds our own claim and reports it busy, and
			// the lease lets it go).
			if p.fut == nil || errors.Is(casErr(err), jetstream.ErrKeyRevisionMismatch) {
				dup, err = l.s.claimRecord(ctx, p.j, c.lease)
			} else {
				err = jsutil.Wrap(err, "claim ack record %q in bucket %q", p.j.kvKey, l.s.bucket)
			}
		}
		if l.s.admitClaimed(ctx, p.j, c, l, dup, err) {
			run = append(run, p.j)
		}
	}
	// Keep the batch's order.
	ordered := make([]*job, 0, len(run))
	for _, j := range batch {
		if contains(run, j) {
			ordered = append(ordered, j)
		}
	}
	return ordered
}

func contains(js []*job, j *job) bool {
	for _, x := range js {
		if x == j {
			return true
		}
	}
	return false
}
