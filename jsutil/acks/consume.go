package acks

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// ConsumeOption configures Consume. Every ProcessOption is one too.
type ConsumeOption interface {
	applyConsume(*consumeConfig)
}

type consumeConfig struct {
	processConfig
	workers  int
	max      int
	idle     time.Duration
	drain    time.Duration
	onResult func(Result)
}

type consumeOpt func(*consumeConfig)

func (f consumeOpt) applyConsume(c *consumeConfig) { f(c) }

// WithWorkers sets how many messages are handled at once (default 1).
func WithWorkers(n int) ConsumeOption { return consumeOpt(func(c *consumeConfig) { c.workers = n }) }

// WithMaxMessages stops Consume after n messages were handled (processed,
// duplicate or failed; busy ones are deferred, not handled). 0: no limit.
func WithMaxMessages(n int) ConsumeOption { return consumeOpt(func(c *consumeConfig) { c.max = n }) }

// WithIdle stops Consume once no message arrived for d (and none is in
// flight). 0: never.
func WithIdle(d time.Duration) ConsumeOption {
	return consumeOpt(func(c *consumeConfig) { c.idle = d })
}

// WithDrainTimeout bounds how long handlers in flight may run on after
// Consume's context is cancelled before their contexts are cancelled too
// (default: the lease).
func WithDrainTimeout(d time.Duration) ConsumeOption {
	return consumeOpt(func(c *consumeConfig) { c.drain = d })
}

// OnResult calls fn after each message (from the worker's goroutine; calls
// may be concurrent).
func OnResult(fn func(Result)) ConsumeOption {
	return consumeOpt(func(c *consumeConfig) { c.onResult = fn })
}

// Summary counts what Consume did.
type Summary struct {
	Processed  int `json:"processed"`
	Duplicates int `json:"duplicates"`
	Failed     int `json:"failed"`
	Busy       int `json:"busy"`
	Mismatches int `json:"mismatches"`
	// Floor is the scope's floor when Consume stopped.
	Floor uint64 `json:"floor"`
}

// Handled is the number of messages processed, skipped as duplicates or
// failed.
func (s Summary) Handled() int { return s.Processed + s.Duplicates + s.Failed }

func (s *Summary) add(r Result) {
	switch r.Action {
	case Processed:
		s.Processed++
	case Duplicate:
		s.Duplicates++
	case Failed:
		s.Failed++
	case Busy:
		s.Busy++
	}
	if r.Mismatch {
		s.Mismatches++
	}
}

// Consume pulls messages from cons and handles each with Process on up to
// WithWorkers goroutines, until ctx is cancelled, WithMaxMessages messages
// were handled, or WithIdle passed without a message. The consumer must be
// a pull consumer with explicit acks.
//
// When ctx is cancelled, Consume stops fetching, naks messages not yet
// started, lets handlers in flight finish (for up to WithDrainTimeout), and
// returns a nil error: no claim is left behind. Along the way it advances
// the scope's floor to the consumer's ack floor.
func (s *Store) Consume(ctx context.Context, cons jetstream.Consumer, handler Handler, opts ...ConsumeOption) (Summary, error) {
	c := consumeConfig{workers: 1}
	for _, o := range opts {
		o.applyConsume(&c)
	}
	if err := c.check(); err != nil {
		return Summary{}, err
	}
	if c.workers < 1 {
		return Summary{}, jsutil.Errorf(jsutil.ErrBadInput, "workers %d: want at least 1", c.workers)
	}
	if c.drain == 0 {
		c.drain = c.lease
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return Summary{}, jsutil.Wrap(err, "get consumer %q", consumerName(cons))
	}
	if info.Config.AckPolicy != jetstream.AckExplicitPolicy {
		policy := "all"
		if info.Config.AckPolicy == jetstream.AckNonePolicy {
			policy = "none"
		}
		return Summary{}, jsutil.Errorf(jsutil.ErrBadInput, "consumer %q on stream %q acks %s: idempotent processing needs explicit acks", info.Name, info.Stream, policy)
	}
	if info.Config.DeliverSubject != "" {
		return Summary{}, jsutil.Errorf(jsutil.ErrBadInput, "consumer %q on stream %q is a push consumer: consume needs a pull consumer", info.Name, info.Stream)
	}
	if c.maxDeliver == 0 && info.Config.MaxDeliver > 0 {
		c.maxDeliver = info.Config.MaxDeliver
	}
	if c.scope == "" {
		c.scope = DefaultScope(info.Stream, info.Name)
	}
	l := &loop{s: s, cons: cons, h: handler, c: &c, stream: info.Stream, name: info.Name}
	return l.run(ctx)
}

func consumerName(cons jetstream.Consumer) string {
	if ci := cons.CachedInfo(); ci != nil {
		return ci.Name
	}
	return ""
}

type loop struct {
	s            *Store
	cons         jetstream.Consumer
	h            Handler
	c            *consumeConfig
	stream, name string

	mu       sync.Mutex
	sum      Summary
	inflight int
	progress bool // something was acked since the floor was last advanced
	freed    chan struct{}
}

func (l *loop) run(ctx context.Context) (Summary, error) {
	c := l.c
	l.freed = make(chan struct{}, c.workers)
	// Handlers run on a context that survives ctx's cancellation for the
	// drain timeout, so they can finish and leave no claim behind.
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	stopDrain := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(c.drain, cancelWork)
		<-work.Done()
		t.Stop()
	})
	defer stopDrain()

	var wg sync.WaitGroup
	lastMsg, lastFloor := time.Now(), time.Now()
	var fatal error
	var notFoundSince time.Time
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		l.mu.Lock()
		free := c.workers - l.inflight
		handled, inflight := l.sum.Handled(), l.inflight
		l.mu.Unlock()
		if c.max > 0 && handled >= c.max {
			break
		}
		if c.max > 0 {
			free = min(free, c.max-handled-inflight)
		}
		if c.idle > 0 && inflight == 0 && time.Since(lastMsg) >= c.idle {
			break
		}
		if time.Since(lastFloor) >= time.Second {
			l.advanceFloor(ctx)
			lastFloor = time.Now()
		}
		if free <= 0 {
			select {
			case <-ctx.Done():
			case <-l.freed:
			}
			continue
		}
		wait := time.Second
		if c.idle > 0 {
			wait = min(wait, max(c.idle-time.Since(lastMsg), 50*time.Millisecond))
		}
		fctx, fcancel := context.WithTimeout(ctx, wait)
		batch, err := l.cons.Fetch(free, jetstream.FetchContext(fctx))
		if err == nil {
			for msg := range batch.Messages() {
				lastMsg = time.Now()
				if ctx.Err() != nil {
					_ = msg.Nak() // not started: leave it to the next run
					continue
				}
				l.mu.Lock()
				l.inflight++
				l.mu.Unlock()
				wg.Add(1)
				go func() {
					defer wg.Done()
					l.handle(work, msg)
				}()
			}
			err = batch.Error()
		}
		fcancel()
		if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, jetstream.ErrNoMessages) {
			backoff, notFoundSince = 50*time.Millisecond, time.Time{}
			continue
		}
		// Connection trouble, a restarting server, a leader election: retry,
		// unless the consumer is gone for good.
		if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) {
			if notFoundSince.IsZero() {
				notFoundSince = time.Now()
			} else if time.Since(notFoundSince) > 10*time.Second {
				fatal = jsutil.Wrap(err, "consume from consumer %q on stream %q", l.name, l.stream)
				break
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Second)
	}
	wg.Wait()
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	l.advanceFloor(fctx)
	floor, _, ferr := l.s.Floor(fctx, l.c.scope)
	l.mu.Lock()
	defer l.mu.Unlock()
	if ferr == nil {
		l.sum.Floor = floor
	}
	return l.sum, fatal
}

func (l *loop) handle(ctx context.Context, msg jetstream.Msg) {
	r, _ := l.s.process(ctx, msg, l.h, &l.c.processConfig)
	l.mu.Lock()
	l.sum.add(r)
	l.inflight--
	if r.Action == Processed || r.Action == Duplicate {
		l.progress = true
	}
	l.mu.Unlock()
	if l.c.onResult != nil {
		l.c.onResult(r)
	}
	select {
	case l.freed <- struct{}{}:
	default:
	}
}

// advanceFloor raises the scope's floor to the consumer's ack floor: every
// message at or below it was acked, and Process acks a message only once
// its record is done (or it is a duplicate of a done one).
func (l *loop) advanceFloor(ctx context.Context) {
	l.mu.Lock()
	p := l.progress
	l.progress = false
	l.mu.Unlock()
	if !p {
		return
	}
	info, err := l.cons.Info(ctx)
	var f uint64
	if err == nil {
		f, err = l.s.AdvanceFloor(ctx, l.c.scope, info.AckFloor.Stream)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.progress = true // try again next time
		return
	}
	l.sum.Floor = f
}
