package acks

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Consume pulls messages from cons and handles each with the protocol of
// Process on up to WithWorkers goroutines, until ctx is cancelled,
// WithMaxMessages deliveries were handled, or WithIdle passed without a
// message. The consumer must be a pull consumer with explicit acks.
//
// Everything a message needs is pipelined: its claim is made as it is
// fetched, its done write and ack leave the handler's path. What sets the
// pace with quick handlers is the bound on unsettled messages (below): at
// one worker, two done writes per round trip.
//   - Messages are fetched ahead of the free workers. The prefetch is
//     bounded so that no message waits long enough to be redelivered: at most
//     workers × (min(AckWait, lease)/3) / (average handling time) messages
//     (one per worker until a handling time is known), at most
//     max(64, 4×workers) (WithPrefetch), and never more than the consumer's
//     MaxAckPending lets the server send; a message that still waited over
//     AckWait/3 is marked in progress before it is claimed, and one whose
//     claim made ahead ran out in the queue is claimed afresh. While work
//     is in hand the window is topped up once half of it is free: one pull
//     request per half window, not one per message.
//   - The floor is not read per message. Consume keeps a copy of the
//     consumer's floor (read at start and at every advance): a message the
//     copy does not cover is run, and only one it covers is checked against
//     the floor on the bucket's leader. A floor is only ever lowered by
//     forgetting records, so a stale copy may miss a newer extension (the
//     message then runs, as its record was compacted) but never covers a
//     message that was not done.
//   - The done write (a compare-and-set on the claim) is published
//     asynchronously; the worker takes its next message meanwhile, and the
//     message is acked (a plain ack) only when its own done write is
//     confirmed; a write without a confirmation goes through the
//     synchronous path (retries, read-back from the leader), which acks
//     only a record it finds done. A lost ack only causes a redelivery,
//     which the done record catches. A handler starts only while fewer
//     than 2 × workers × batch messages are unsettled (handler started,
//     done write not confirmed): with quick handlers that many done writes
//     are in flight together, and a process killed mid-run leaves at most
//     that many messages to run again.
//
// A refusal of the server's permissions on any subject the run uses (its
// pull requests, its acks, the bucket's records, the dead-letter subject)
// ends it with an error classed jsutil.ErrPermission.
//
// With WithDeadLetter, Consume also sweeps the scope's dead-letter watches
// as it starts and once per lease (see SweepDeadLetters).
//
// When ctx is cancelled, Consume stops fetching, naks messages not yet
// started, lets handlers in flight finish (for up to WithDrainTimeout, then
// their contexts are cancelled with ErrStopped as the cause: a handler that
// then fails is Released, not failed), and returns a nil error: no claim is
// left behind. Along the way it advances
// the consumer's floor to the consumer's ack floor.
func (s *Store) Consume(ctx context.Context, cons jetstream.Consumer, handler Handler, opts ...ConsumeOption) (Summary, error) {
	l, err := s.newLoop(ctx, cons, opts)
	if err != nil {
		return Summary{}, err
	}
	l.h = handler
	return l.run(ctx)
}

func (s *Store) newLoop(ctx context.Context, cons jetstream.Consumer, opts []ConsumeOption) (*loop, error) {
	c := consumeConfig{workers: 1}
	for _, o := range opts {
		o.applyConsume(&c)
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	if err := s.checkLease(c.lease); err != nil {
		return nil, err
	}
	if err := c.checkCounts(); err != nil {
		return nil, err
	}
	if c.drain == 0 {
		c.drain = c.lease
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, jsutil.Wrap(err, "get consumer %q", consumerName(cons))
	}
	if err := checkPullConsumer(info); err != nil {
		return nil, err
	}
	if c.maxDeliver == 0 && info.Config.MaxDeliver > 0 {
		c.maxDeliver = info.Config.MaxDeliver
	}
	if c.scope == "" {
		c.scope = DefaultScope(info.Stream, info.Name)
	}
	// The incarnations the records and floor ranges of this run are
	// written for, and against which those found are judged.
	c.consumerCreated = info.Created
	if st, err := s.streamOf(ctx, info.Stream); err == nil {
		c.streamCreated = st.created
	}
	maxExtra := max(64, 4*c.workers)
	if c.prefetch > 0 {
		maxExtra = c.prefetch
	}
	ackWait := info.Config.AckWait
	if ackWait <= 0 {
		ackWait = 30 * time.Second
	}
	l := &loop{
		s: s, cons: cons, c: &c, stream: info.Stream, name: info.Name, info: info,
		ref:     FloorRef{Scope: c.scope, Stream: info.Stream, Consumer: info.Name},
		ackWait: ackWait, maxExtra: maxExtra, failing: map[uint64]string{}, warned: map[string]bool{},
		freed: make(chan struct{}, 1), lastSeq: info.Delivered.Stream + info.NumPending, fetchCtx: ctx,
		priorErr: s.js.Conn().LastError(),
	}
	warn, err := l.checkDeadLetter(ctx)
	if err != nil {
		return nil, err
	}
	if warn != "" {
		l.warnLocked(warn)
	}
	if need := ackWait + 2*c.lease; c.maxDeliver > 0 && s.doneTTL() < need {
		// A last delivery's watch lives as long as the records: it must
		// last until the server gives up and a sweep runs.
		l.warnLocked(fmt.Sprintf("records are kept for %s, less than the ack wait and two leases (%s): a message whose worker stops on its last allowed delivery may go unrecorded; keep records longer (--retention)", s.doneTTL(), need))
	}
	return l, nil
}

// checkCounts checks the run's workers, prefetch, maximum and batch size.
func (c *consumeConfig) checkCounts() error {
	if c.workers < 1 || c.workers > MaxWorkers {
		return jsutil.Errorf(jsutil.ErrBadInput, "workers %d: want 1 to %d", c.workers, MaxWorkers)
	}
	if c.prefetch < 0 || c.max < 0 || c.batch < 0 {
		return jsutil.Errorf(jsutil.ErrBadInput, "negative prefetch, maximum or batch size")
	}
	if c.prefetch > MaxPrefetch || c.batch > MaxBatch {
		return jsutil.Errorf(jsutil.ErrBadInput, "prefetch %d or batch size %d: want at most %d and %d", c.prefetch, c.batch, MaxPrefetch, MaxBatch)
	}
	return nil
}

// checkPullConsumer refuses a consumer Consume cannot use: a push
// consumer, or one without explicit acks.
func checkPullConsumer(info *jetstream.ConsumerInfo) error {
	if info.Config.DeliverSubject != "" {
		return jsutil.Errorf(jsutil.ErrBadInput, "consumer %q on stream %q is a push consumer: consume needs a pull consumer", info.Name, info.Stream)
	}
	if info.Config.AckPolicy != jetstream.AckExplicitPolicy {
		policy := "all"
		if info.Config.AckPolicy == jetstream.AckNonePolicy {
			policy = "none"
		}
		return jsutil.Errorf(jsutil.ErrBadInput, "consumer %q on stream %q acks %s: idempotent processing needs explicit acks", info.Name, info.Stream, policy)
	}
	return nil
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
	bh           BatchHandler
	c            *consumeConfig
	stream, name string
	info         *jetstream.ConsumerInfo
	ref          FloorRef
	ackWait      time.Duration
	maxExtra     int

	leases      *leases
	queue       chan *job
	completions chan *pendingDone
	// inbox is the prefix of the done writes' replies, which the
	// connection's reader puts in replies (see doneAsync).
	inbox     string
	replies   chan *nats.Msg
	doneToken uint64 // the last done write's reply token (l.mu)
	// unsettled holds one token per message whose handler started and
	// whose outcome is not settled yet (its done write not confirmed):
	// the messages that may run again if the process is killed.
	unsettled chan struct{}
	freed     chan struct{}
	fallbacks sync.WaitGroup

	mu       sync.Mutex
	sum      Summary
	failing  map[uint64]string // seq → record key, of messages whose last outcome was a failure
	warned   map[string]bool
	active   int // fetched, handler not finished
	out      int // fetched, not finished
	avgDur   time.Duration
	lastMsg  time.Time
	progress bool   // something was acked since the floor was last advanced
	maxAcked uint64 // the highest sequence acked
	floor    Floor
	lastSeq  uint64
	// fetchCtx is the run's context, for the writes the fetcher makes.
	fetchCtx context.Context
	// priorErr is the connection's last error as the run started: a
	// denial reported before it is not the run's (see denial).
	priorErr error
	givenUp  []maxDeliveriesAdvisory // messages the server gave up on (watchAdvisories)
}

func (l *loop) run(ctx context.Context) (Summary, error) {
	c := l.c
	l.queue = make(chan *job, 2*c.workers*max(c.batch, 1)+l.maxExtra)
	// A handler starts only while fewer than 2 × workers × batch messages
	// are unsettled (their handler started, their done write not yet
	// confirmed), so a jsctl killed mid-run leaves at most that many
	// messages that may run again. Between them, the done writes of
	// handlers that finished are in flight together (see doneAsync).
	unsettled := 2 * c.workers * max(c.batch, 1)
	l.unsettled = make(chan struct{}, unsettled)
	l.completions = make(chan *pendingDone, unsettled)
	// Replies to done writes (at most unsettled in flight, plus late ones
	// for writes the completer gave up waiting for: a reply that finds the
	// channel full is dropped, and its write confirmed by a read-back).
	nc := l.s.js.Conn()
	l.inbox, l.replies = nc.NewInbox()+".", make(chan *nats.Msg, 2*unsettled+64)
	replySub, err := nc.ChanSubscribe(l.inbox+"*", l.replies)
	if err != nil {
		return Summary{}, jsutil.Wrap(err, "consume from consumer %q on stream %q: subscribe to replies", l.name, l.stream)
	}
	defer func() { _ = replySub.Unsubscribe() }()
	// Handlers run on a context that survives ctx's cancellation for the
	// drain timeout, so they can finish and leave no claim behind; then it
	// is cancelled with ErrStopped (see ErrStopped).
	work, cancelWork := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelWork(nil)
	stopDrain := stopAfter(ctx, c.drain, cancelWork)
	defer stopDrain()

	defer l.watchAdvisories()()
	l.startFloor(ctx)
	l.sweep(ctx)
	l.leases = l.s.newLeases(c.lease)
	defer l.leases.close()
	var workers sync.WaitGroup
	for range c.workers {
		workers.Add(1)
		go func() {
			defer workers.Done()
			if l.bh != nil {
				l.batchWorker(ctx, work)
			} else {
				l.worker(ctx, work)
			}
		}()
	}
	completer := make(chan struct{})
	go func() {
		defer close(completer)
		l.complete(work)
	}()

	fatal := l.fetch(ctx)
	close(l.queue)
	workers.Wait()
	close(l.completions)
	<-completer
	l.fallbacks.Wait()

	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	// Acks are sent without waiting: make sure the server has them before
	// the consumer's ack floor is read for the last time.
	_ = l.s.js.Conn().FlushWithContext(fctx)
	l.advanceFloor(fctx, true)
	l.countFailed(fctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sum.Floor = l.floor.Seq
	if l.sum.Warnings == nil {
		l.sum.Warnings = []string{}
	}
	sort.Strings(l.sum.Warnings)
	return l.sum, fatal
}

// countFailed counts the messages whose last outcome in the run was a
// failure. A delivery can fail after a redelivery of the same message
// succeeded (its claim got no answer during a leader election while the
// server redelivered it elsewhere), so a message with a done record made
// for it counts as succeeded.
func (l *loop) countFailed(ctx context.Context) {
	l.mu.Lock()
	failing := make(map[uint64]string, len(l.failing))
	for seq, key := range l.failing {
		failing[seq] = key
	}
	l.mu.Unlock()
	n := 0
	for seq, key := range failing {
		if key != "" {
			if r, err := l.s.getKV(ctx, key); err == nil && r.State == StateDone && r.Seq == seq {
				continue
			}
		}
		n++
	}
	l.mu.Lock()
	l.sum.Failed = n
	l.mu.Unlock()
}

// worker handles messages one at a time.
func (l *loop) worker(ctx, work context.Context) {
	c := &l.c.processConfig
	for j := range l.queue {
		if ctx.Err() != nil {
			l.drop(j) // not started: leave it to the next run
			continue
		}
		start := time.Now()
		l.freshen(j)
		run := true
		if j.d.Idempotent {
			dup, err := l.resolveClaim(work, j)
			run = l.s.admitClaimed(work, j, c, l, dup, err)
		}
		if !run {
			l.handled(j, start)
			l.finish(j)
			continue
		}
		l.unsettle(j)
		hctx, set := l.leases.hold(work, []*job{j})
		herr := l.h(hctx, j.d)
		j.stopped = herr != nil && stoppedBy(hctx)
		l.leases.release(set)
		l.handled(j, start)
		l.conclude(work, j, herr)
	}
}

// conclude finishes a message whose handler ran: a lost lease, a failure,
// or done (for a record, asynchronously: the completer finishes it).
func (l *loop) conclude(work context.Context, j *job, herr error) {
	c := &l.c.processConfig
	switch {
	case j.res.LeaseLost:
		l.s.leaseLost(j, c)
	case j.stopped:
		l.s.released(work, j, c, herr)
	case herr != nil:
		l.s.handlerFailed(work, j, c, herr)
	case !j.d.Idempotent || j.noClaim:
		l.s.finishDone(work, j, c)
	default:
		l.doneAsync(work, j)
		return
	}
	l.finish(j)
}

// freshen marks a message that waited long in the queue as in progress,
// so JetStream does not redeliver it while it is being claimed.
func (l *loop) freshen(j *job) {
	if time.Since(j.got) > l.ackWait/3 {
		_ = j.msg.InProgress()
	}
}

// handled notes that j's handler part is over (the done write may still
// be in flight), for the prefetch bound.
func (l *loop) handled(j *job, start time.Time) {
	d := time.Since(start)
	l.mu.Lock()
	l.active--
	if l.avgDur == 0 {
		l.avgDur = d
	} else {
		l.avgDur = (7*l.avgDur + d) / 8
	}
	l.mu.Unlock()
	l.signal()
}

func (l *loop) signal() {
	select {
	case l.freed <- struct{}{}:
	default:
	}
}

// unsettle takes j's place among the unsettled messages before its
// handler starts (waiting while the done writes of earlier ones are
// confirmed); finish gives it back.
func (l *loop) unsettle(j *job) {
	l.unsettled <- struct{}{}
	j.unsettled = true
}

// finish records j's result.
func (l *loop) finish(j *job) {
	if j.unsettled {
		j.unsettled = false
		<-l.unsettled
	}
	j.res.Duration = time.Since(j.got)
	// It leaves the messages in flight and is counted in one step: seen in
	// between, it would count in neither, and the fetcher (which takes up
	// to max - handled - out more) would take one too many.
	l.mu.Lock()
	l.out--
	l.countLocked(j.res)
	l.mu.Unlock()
	l.notify(j.res)
	l.signal() // the fetcher may be waiting for --max or --idle to be reached
}

func (l *loop) report(r Result) {
	l.mu.Lock()
	l.countLocked(r)
	l.mu.Unlock()
	l.notify(r)
}

// countLocked adds r to the summary; l.mu is held.
func (l *loop) countLocked(r Result) {
	s := &l.sum
	switch r.Action {
	case Processed:
		s.Processed++
		l.progress, l.maxAcked = true, max(l.maxAcked, r.Seq)
		delete(l.failing, r.Seq)
	case Duplicate:
		s.Duplicates++
		l.progress, l.maxAcked = true, max(l.maxAcked, r.Seq)
		delete(l.failing, r.Seq)
	case Failed:
		s.FailedDeliveries++
		key := ""
		if r.Idempotent {
			key = recordKey(r.Scope, r.KeyFrom, r.Key)
		}
		l.failing[r.Seq] = key
		if r.Final {
			s.Terminated++
			l.progress, l.maxAcked = true, max(l.maxAcked, r.Seq) // a terminated message moves the ack floor too
		}
	case Busy:
		s.Busy++
	case Released:
		s.Released++
	}
	if r.Mismatch {
		s.Mismatches++
	}
	if r.DuplicateRun && r.Action == Processed {
		s.DuplicateRuns++
	}
	if r.DeadLettered {
		s.DeadLettered++
	}
	if r.Stale != "" {
		l.warnLocked(r.Stale)
	}
	if r.DeadLetterRefused != "" {
		l.warnLocked(r.DeadLetterRefused)
	}
	if r.ClaimProblem != "" {
		l.warnLocked(r.ClaimProblem)
	}
	if r.Action != Busy {
		l.lastMsg = time.Now() // a busy message is not progress: --idle counts on
	}
	for _, w := range r.FloorStale {
		l.warnLocked(w)
	}
	if r.FloorCorrupt != "" {
		l.warnLocked("the floor of consumer " + l.name + " in scope " + ScopeDisplay(l.ref.Scope) + " was ignored: " + r.FloorCorrupt)
	}
}

// notify hands r to the OnResult callback (l.mu is not held).
func (l *loop) notify(r Result) {
	if l.c.onResult != nil {
		l.c.onResult(r)
	}
}

// stopAfter cancels with ErrStopped d after ctx is done (the run's own
// stop), unless the returned function is called first.
func stopAfter(ctx context.Context, d time.Duration, cancel context.CancelCauseFunc) (stop func()) {
	quit := make(chan struct{})
	stopWait := context.AfterFunc(ctx, func() {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			cancel(ErrStopped)
		case <-quit:
		}
	})
	return func() {
		stopWait()
		close(quit)
	}
}

// stoppedBy reports whether ctx was cancelled by the run's own stop.
func stoppedBy(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), ErrStopped)
}

func (l *loop) warnLocked(w string) {
	if !l.warned[w] {
		l.warned[w] = true
		l.sum.Warnings = append(l.sum.Warnings, w)
	}
}
