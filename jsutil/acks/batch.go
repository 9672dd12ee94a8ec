package acks

import (
	"context"
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

// WithBatch makes ConsumeBatch hand up to n messages (at most MaxBatch) at
// once to its handler, waiting at most wait for a partial batch to fill (0:
// take what is there).
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
	ds := make([]Delivery, len(run))
	for i, j := range run {
		ds[i] = j.d
		l.unsettle(j)
	}
	hctx, set := l.leases.hold(work, run)
	results, err := l.callBatch(hctx, ds)
	stopped := stoppedBy(hctx)
	l.leases.release(set)
	per := time.Since(start) / time.Duration(len(run))
	for _, j := range run {
		l.handled(j, time.Now().Add(-per))
	}
	for i, j := range run {
		herr := err
		if herr == nil && results != nil {
			herr = results[i]
		}
		j.stopped = stopped && herr != nil
		l.conclude(work, j, herr)
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

// claimAll finishes the claims of a batch's idempotent messages (made
// ahead, all in flight together, as they were fetched) and returns the
// messages whose handler runs, in the batch's order.
func (l *loop) claimAll(ctx context.Context, batch []*job) []*job {
	c := &l.c.processConfig
	var run []*job
	for _, j := range batch {
		if !j.d.Idempotent {
			run = append(run, j)
			continue
		}
		dup, err := l.resolveClaim(ctx, j)
		if l.s.admitClaimed(ctx, j, c, l, dup, err) {
			run = append(run, j)
		}
	}
	return run
}

func contains(js []*job, j *job) bool {
	for _, x := range js {
		if x == j {
			return true
		}
	}
	return false
}
