package acks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The fetcher of Consume: it pulls messages into the queue ahead of the
// workers (claiming each as it arrives, see enqueue), within a window that
// keeps every message's wait in the queue well inside the ack wait and the
// lease, and does the run's periodic chores between pulls.

// fetcher is the fetch loop's state between pulls.
type fetcher struct {
	lastFloor, lastSweep time.Time
	// notFoundSince is when pulls began to find the consumer missing.
	notFoundSince time.Time
	retry         time.Duration // the next back-off after a failed pull
}

const firstRetry = 50 * time.Millisecond

// consumerGoneFor is how long pulls may find the consumer missing (a
// leader election can make it look so for a moment) before the run ends.
const consumerGoneFor = 10 * time.Second

// fetch pulls messages into the queue until a stop condition holds; it
// returns an error only when the consumer is gone for good.
func (l *loop) fetch(ctx context.Context) (err error) {
	defer func() { l.fetchStopped(err) }()
	l.mu.Lock()
	l.lastMsg = time.Now()
	l.mu.Unlock()
	f := &fetcher{lastFloor: time.Now(), lastSweep: time.Now(), retry: firstRetry}
	for ctx.Err() == nil {
		if err := l.denial(); err != nil {
			return err
		}
		w, stop := l.window()
		if stop {
			return nil
		}
		l.chores(ctx, f)
		if !w.due() {
			l.waitFreed(ctx, time.Second)
			continue
		}
		got, err := l.pull(ctx, w)
		l.fetched(got, err)
		if err := l.afterPull(ctx, f, w, got, err); err != nil {
			return err
		}
	}
	return nil
}

// window is what the fetcher may take now.
type window struct {
	size   int  // messages fetched and not yet handled, at most
	room   int  // what may be fetched now: the size less what is in hand
	last   bool // room is what is left of WithMaxMessages
	active int  // messages in hand: fetched, their handler not finished
	// wait is how long a pull with nothing in hand waits for messages.
	wait time.Duration
}

// window reads the loop's counts; stop is set when WithMaxMessages
// deliveries were handled or WithIdle passed without a message.
func (l *loop) window() (w window, stop bool) {
	c := l.c
	l.mu.Lock()
	w.size = c.workers*max(c.batch, 1) + l.extra()
	w.active = l.active
	handled, out, lastMsg := l.sum.Handled(), l.out, l.lastMsg
	l.mu.Unlock()
	w.room = w.size - w.active
	if c.max > 0 {
		if handled >= c.max {
			return w, true
		}
		if left := c.max - handled - out; left <= w.room {
			w.room, w.last = left, true
		}
	}
	if c.idle > 0 && out == 0 && time.Since(lastMsg) >= c.idle {
		return w, true
	}
	w.wait = time.Second
	if c.idle > 0 {
		w.wait = min(w.wait, max(c.idle-time.Since(lastMsg), 50*time.Millisecond))
	}
	return w, false
}

// due reports whether to pull now. With nothing in hand, always (the pull
// waits for messages); with work in hand, once half the window is free
// (or all that is left of WithMaxMessages): one pull request per half
// window, not one per message handled.
func (w window) due() bool {
	switch {
	case w.room <= 0:
		return false
	case w.active == 0 || w.last:
		return true
	}
	return w.room >= max(1, w.size/2)
}

// extra is how many messages may wait in the queue beyond the workers:
// enough to keep them busy, few enough that none waits a third of the ack
// wait or of the lease (their claims are made as they are fetched).
func (l *loop) extra() int {
	// With batches, the next batch is fetched while one runs, so that it
	// does not wait out --batch-wait to fill.
	next := l.c.workers * l.c.batch
	if l.avgDur <= 0 {
		// Before a handling time is known, one message per worker: a slow
		// handler must not leave claims made ahead waiting past the lease.
		return next + min(l.maxExtra, l.c.workers)
	}
	n := int(time.Duration(l.c.workers) * (min(l.ackWait, l.c.lease) / 3) / l.avgDur)
	return next + max(0, min(n, l.maxExtra))
}

// chores advances the floor once a second, watches the messages the
// server gave up on, and sweeps the dead-letter watches once per lease.
func (l *loop) chores(ctx context.Context, f *fetcher) {
	if time.Since(f.lastFloor) >= time.Second {
		l.advanceFloor(ctx, false)
		f.lastFloor = time.Now()
	}
	l.noteGivenUp(ctx)
	if time.Since(f.lastSweep) >= l.c.lease {
		l.sweep(ctx)
		f.lastSweep = time.Now()
	}
}

// pull fetches up to w.room messages into the queue. With work in hand it
// takes what is there now and never waits in a pull request: that would
// hold the fetcher past the last message (WithMaxMessages) or past a freed
// worker. With nothing in hand it waits in the pull request for messages.
func (l *loop) pull(ctx context.Context, w window) (int, error) {
	var batch jetstream.MessageBatch
	var err error
	if w.active > 0 {
		batch, err = l.cons.FetchNoWait(w.room)
	} else {
		fctx, cancel := context.WithTimeout(ctx, w.wait)
		defer cancel()
		batch, err = l.cons.Fetch(w.room, jetstream.FetchContext(fctx))
	}
	if err != nil {
		return 0, err
	}
	got := 0
	for msg := range batch.Messages() {
		got++
		l.enqueue(msg)
	}
	return got, batch.Error()
}

// afterPull handles a pull's outcome: with work in hand and nothing more
// to take it waits for a worker (or a moment); after connection trouble, a
// restarting server or a leader election it backs off and the loop pulls
// again. It returns an error only when the consumer is gone for good.
func (l *loop) afterPull(ctx context.Context, f *fetcher, w window, got int, err error) error {
	quiet := err == nil || errors.Is(err, jetstream.ErrNoMessages)
	if quiet && w.active > 0 && got == 0 {
		l.waitFreed(ctx, 100*time.Millisecond)
	}
	if quiet || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		f.retry, f.notFoundSince = firstRetry, time.Time{}
		return nil
	}
	if errors.Is(err, nats.ErrNoResponders) {
		// A pull of a consumer that no longer exists has no one to
		// answer it; so has one sent while the server restarts. Ask.
		if _, ierr := l.cons.Info(ctx); errors.Is(ierr, jetstream.ErrConsumerNotFound) || errors.Is(ierr, jetstream.ErrStreamNotFound) {
			err = ierr
		}
	}
	if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		if f.notFoundSince.IsZero() {
			f.notFoundSince = time.Now()
		} else if time.Since(f.notFoundSince) > consumerGoneFor {
			return jsutil.Classify(jsutil.ErrNotFound, fmt.Errorf("consume from consumer %q on stream %q: it is gone (deleted, or its stream was): not found for %v: %w", l.name, l.stream, consumerGoneFor, err))
		}
	}
	select {
	case <-ctx.Done():
	case <-time.After(f.retry):
	}
	f.retry = min(f.retry*2, time.Second)
	return nil
}

// waitFreed waits until a worker frees a place, ctx ends, or d passed.
func (l *loop) waitFreed(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-l.freed:
	case <-t.C:
	}
}
