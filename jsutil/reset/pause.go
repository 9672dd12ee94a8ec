package reset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// A change made with Options.Pause pauses the consumer first, with the
// server's pause API, instead of refusing it because a client is reading
// from it (or moving it under the client's feet, as --force does):
//
//  1. The intent record is written with the pause it will set (PauseIntent).
//  2. The consumer is paused until resumed, and jsctl waits until the
//     server reports it paused: from then on it delivers nothing, not even
//     to pull requests already waiting (they stay waiting).
//  3. jsctl waits, at most Options.DrainTimeout, until no delivered message
//     is left unacknowledged. A paused consumer redelivers nothing, so a
//     message that a client still holds, died holding or nak'd keeps the
//     wait going; after the timeout the change is refused (nothing changed,
//     the consumer resumed) unless Options.Force.
//  4. The change is made and verified as any other (a recreate creates the
//     consumer paused) and recorded in history.
//  5. The consumer is resumed (see endPause), unless Options.KeepPaused,
//     and only then is the intent record deleted.
//
// A run that dies in between leaves the consumer paused, at its old
// position or at the target, never half moved, and the intent record says
// so: PlanRecover/ExecuteRecover finish the change and then resume it.

// PauseStep is what a change made with Options.Pause does about pausing.
type PauseStep struct {
	// Resume says the consumer is resumed after the change; false leaves
	// it paused (Options.KeepPaused).
	Resume bool `json:"resume"`
	// AlreadyPausedUntil is set when the consumer is paused already: it is
	// changed while paused and left paused as it was.
	AlreadyPausedUntil *time.Time `json:"already_paused_until,omitempty"`
	// Waiting and AckPending are the consumer's waiting pull requests and
	// unacknowledged deliveries when the change was planned.
	Waiting    int `json:"waiting"`
	AckPending int `json:"ack_pending"`
	// DrainTimeoutNS bounds the wait for unacknowledged deliveries.
	DrainTimeoutNS int64 `json:"drain_timeout_ns"`
	// Once executed: Paused says jsctl paused it, DrainNS how long its
	// deliveries took to settle after the pause, Resumed that it was
	// resumed.
	Paused  bool  `json:"paused"`
	DrainNS int64 `json:"drain_ns"`
	Resumed bool  `json:"resumed"`
	// Drain is how the wait for its deliveries ended, one of the Drain*
	// outcomes ("" before it ended); Unacked how many deliveries were
	// still unacknowledged then.
	Drain   string `json:"drain,omitempty"`
	Unacked int    `json:"unacked,omitempty"`
}

// The outcomes of the wait for a paused consumer's deliveries.
const (
	DrainSettled   = "settled"   // none is left unacknowledged
	DrainTimedOut  = "timed out" // DrainTimeout passed first
	DrainCancelled = "cancelled" // the run was interrupted (ctx ended)
	DrainFailed    = "failed"    // the server failed a request
)

// Drain is what Options.Drain is told while jsctl waits for a paused
// consumer's unacknowledged deliveries.
type Drain struct {
	Stream, Consumer string
	// Unacked is how many deliveries are unacknowledged.
	Unacked int
	// Waited is how long it has waited, of Timeout.
	Waited, Timeout time.Duration
	// Outcome is set (a Drain* outcome) in the last call, when the wait
	// has ended.
	Outcome string
}

// PauseIntent is the pause a change sets, kept in its intent record so
// that recover resumes the consumer after finishing the change.
type PauseIntent struct {
	// Until is the pause time the change set (the year 9999: until
	// resumed).
	Until time.Time `json:"until"`
	// Resume says the consumer is resumed once the change is made
	// (false: --keep-paused).
	Resume bool `json:"resume"`
}

// pauseForever is the pause time a change sets: the end of the year 9999,
// which never comes (as jsctl consumer pause without --until).
var pauseForever = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

// wakeDelay is how far ahead of the server's clock endPause lets a pause
// end by itself, so that the server wakes the consumer. A pause that ends
// within wakeGrace is taken for such a wake, set by a run that was
// interrupted before it could clear the pause.
const (
	wakeDelay = 300 * time.Millisecond
	wakeGrace = 5 * time.Second
)

// pausePlan is the pause step of a change of the consumer st.
func (p *planner) pausePlan(st *consumerState) *PauseStep {
	info := st.info
	ps := &PauseStep{Resume: !p.opts.KeepPaused, Waiting: info.NumWaiting, AckPending: info.NumAckPending, DrainTimeoutNS: p.opts.DrainTimeout.Nanoseconds()}
	if until := pausedUntil(st); until != nil {
		ps.AlreadyPausedUntil, ps.Resume = until, false
	}
	return ps
}

// warnWaiting warns, for a change made with Options.Pause, that a
// recreate does not keep the consumer's waiting pull requests: deleting
// the consumer ends each with "409 Consumer Deleted", and the clients must
// send them again. Only a change in place serves them after the resume.
func warnWaiting(c *Change) {
	if n := c.state.info.NumWaiting; n > 0 && c.Method == Recreate {
		what := fmt.Sprintf("%d pull requests are waiting", n)
		if n == 1 {
			what = "1 pull request is waiting"
		}
		c.warn("%s: the recreate ends them with 409 Consumer Deleted, and their clients must send them again (only a reset in place serves waiting requests after the resume)", what)
	}
}

// pausedUntil is the end of the consumer's pause, nil when it is not
// paused.
func pausedUntil(st *consumerState) *time.Time {
	if !st.info.Paused || st.info.Config.PauseUntil == nil {
		return nil
	}
	t := st.info.Config.PauseUntil.UTC()
	return &t
}

// pauseIntent decides, from what the server holds now (st), whether the
// change pauses the consumer: not when it is paused already.
func (x *executor) pauseIntent(c *Change, st *consumerState) *PauseIntent {
	if !x.opts.Pause || c.Method == Create {
		return nil
	}
	if c.Pause == nil {
		c.Pause = x.pausePlan(st)
	}
	if until := pausedUntil(st); until != nil {
		c.Pause.AlreadyPausedUntil, c.Pause.Resume = until, false
		return nil
	}
	c.Pause.AlreadyPausedUntil, c.Pause.Resume = nil, !x.opts.KeepPaused
	return &PauseIntent{Until: pauseForever, Resume: !x.opts.KeepPaused}
}

// beginPause pauses the consumer for its change, waits until the server
// reports it paused and then until none of its deliveries is left
// unacknowledged (at most DrainTimeout), and returns its state then.
func (x *executor) beginPause(ctx context.Context, c *Change, in *Intent) (*consumerState, error) {
	c.pauseSent = true
	if err := x.setPause(ctx, c, in.Pause.Until); err != nil {
		return nil, jsutil.Wrap(err, "reset consumer %q on %q: pause it (nothing changed)", c.Consumer, c.Stream)
	}
	c.Pause.Paused = true
	start := time.Now()
	var st *consumerState
	err := x.poll(ctx, x.opts.Settle, func() (bool, error) {
		var err error
		st, err = x.load(ctx, c)
		return err == nil && st.info.Paused, err
	})
	if err != nil {
		x.drained(ctx, c, start, err)
		return nil, jsutil.Wrap(err, "reset consumer %q on %q: wait for the server to report it paused (nothing changed)", c.Consumer, c.Stream)
	}
	c.Pause.Unacked = st.info.NumAckPending
	if st.info.NumAckPending > 0 {
		x.drainTold(c, start, "")
		derr := x.poll(ctx, x.opts.DrainTimeout, func() (bool, error) {
			cur, err := x.load(ctx, c)
			if err == nil {
				st, c.Pause.Unacked = cur, cur.info.NumAckPending
			}
			x.drainTold(c, start, "")
			return err == nil && cur.info.NumAckPending == 0, err
		})
		if derr != nil && !errors.Is(derr, errPollTimeout) {
			x.drained(ctx, c, start, derr)
			return nil, jsutil.Wrap(derr, "reset consumer %q on %q: wait for its deliveries to settle (nothing changed)", c.Consumer, c.Stream)
		}
	}
	x.drained(ctx, c, start, nil)
	if n := st.info.NumAckPending; n > 0 {
		if !x.opts.Force {
			return nil, jsutil.Errorf(jsutil.ErrConflict, "reset consumer %q on %q: %s still unacknowledged after %s (a client is working on it, died holding it or nak'd it; a paused consumer redelivers nothing); nothing changed: wait longer with --drain-timeout, or pass --force to reset it anyway",
				c.Consumer, c.Stream, deliveries(n), x.opts.DrainTimeout)
		}
		c.warn("%s still unacknowledged after %s; changed anyway (--force)", deliveries(n), x.opts.DrainTimeout)
	}
	return st, nil
}

// drained records how the wait for the change's deliveries, begun at
// start, ended (err: the wait's error, nil when it ended by itself) and
// tells Options.Drain.
func (x *executor) drained(ctx context.Context, c *Change, start time.Time, err error) {
	ps := c.Pause
	ps.DrainNS = time.Since(start).Nanoseconds()
	switch {
	case ctx.Err() != nil:
		ps.Drain = DrainCancelled
	case err != nil:
		ps.Drain = DrainFailed
	case ps.Unacked > 0:
		ps.Drain = DrainTimedOut
	default:
		ps.Drain = DrainSettled
	}
	x.drainTold(c, start, ps.Drain)
}

// drainTold tells Options.Drain how the wait begun at start goes.
func (x *executor) drainTold(c *Change, start time.Time, outcome string) {
	if x.opts.Drain != nil {
		x.opts.Drain(Drain{Stream: c.Stream, Consumer: c.Consumer, Unacked: c.Pause.Unacked,
			Waited: time.Since(start), Timeout: x.opts.DrainTimeout, Outcome: outcome})
	}
}

// deliveries says "1 delivered message is" or "N delivered messages are".
func deliveries(n int) string {
	if n == 1 {
		return "1 delivered message is"
	}
	return fmt.Sprintf("%d delivered messages are", n)
}

// endPause resumes a consumer its change paused (in.Pause), when the change
// is to resume it or always is set (a change that did not happen). A pause
// that someone else has set since (to another time, more than wakeGrace
// away) is left alone.
//
// A consumer resumed before its pause time does not wake on nats-server
// 2.15.2: a pull request already waiting is served only when something
// else wakes the consumer (a new message, a new pull request, the
// request's heartbeat). A pause that ends by itself does wake it, so the
// pause is first set to end a moment from now by the server's clock, and
// once it has ended it is cleared from the configuration.
func (x *executor) endPause(ctx context.Context, c *Change, in *Intent, always bool) error {
	if in.Pause == nil || !in.Pause.Resume && !always {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	t0 := time.Now()
	st, err := x.loadSure(ctx, c)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil // nothing to resume
	}
	if err != nil {
		return err
	}
	now := serverNow(st, t0)
	until := st.info.Config.PauseUntil
	switch {
	case until == nil:
		c.resumed()
		return nil
	case until.After(now.Add(wakeGrace)) && !until.Equal(in.Pause.Until):
		c.warn("it was paused until %s by someone else meanwhile: left paused", until.UTC().Format(time.RFC3339))
		return nil
	}
	if st.info.Paused {
		if until.Equal(in.Pause.Until) {
			// Let the pause end by itself, which wakes the consumer.
			if err := x.setPause(ctx, c, now.Add(wakeDelay)); err != nil {
				return err
			}
			if x.crash("waking") {
				return errCrashed
			}
		}
		// Else it ends within wakeGrace: the wake an interrupted run set.
		err := x.poll(ctx, x.opts.Settle+wakeGrace, func() (bool, error) {
			st, err := x.load(ctx, c)
			return err == nil && !st.info.Paused, err
		})
		if err != nil {
			return err
		}
	}
	// Clear the pause from the configuration.
	if err := x.setPause(ctx, c, time.Time{}); err != nil {
		return err
	}
	err = x.poll(ctx, x.opts.Settle, func() (bool, error) {
		st, err := x.load(ctx, c)
		return err == nil && st.info.Config.PauseUntil == nil, err
	})
	if err != nil {
		return err
	}
	c.resumed()
	return nil
}

func (c *Change) resumed() {
	if c.Pause != nil {
		c.Pause.Resumed = true
	}
}

// serverNow estimates the server's clock from the consumer info read
// since t0 (its "ts"), else the local clock.
func serverNow(st *consumerState, t0 time.Time) time.Time {
	if ts := st.info.TimeStamp; !ts.IsZero() {
		return ts.Add(time.Since(t0))
	}
	return time.Now()
}

// setPause pauses the consumer until the given time (zero: resumes it),
// retrying within Settle while the server does not answer; pausing is
// idempotent.
func (x *executor) setPause(ctx context.Context, c *Change, until time.Time) error {
	rt := jsutil.RetryUntil(x.opts.Settle)
	for {
		err := pauseConsumer(ctx, x.js, c.Stream, c.Consumer, until, x.opts.Timeout)
		if err == nil || !lost(err) || !rt.Again(ctx, err) {
			return err
		}
	}
}

// pollPause is poll's wait before attempt+1: 50, 100, then 200ms.
func pollPause(attempt int) time.Duration {
	return min(50*time.Millisecond<<min(attempt, 2), 200*time.Millisecond)
}

// errPollTimeout is poll's error when its condition did not come true.
var errPollTimeout = errors.New("not reached in time")

// poll calls check every 50 to 200 ms until it returns true, at most for
// d. Errors that say the server did not answer are retried; others end
// the poll.
func (x *executor) poll(ctx context.Context, d time.Duration, check func() (bool, error)) error {
	rt := &jsutil.Retrier{Deadline: time.Now().Add(d), Pause: pollPause}
	for {
		ok, err := check()
		if ok {
			return nil
		}
		if err != nil && !lost(err) {
			return err
		}
		if rt.Expired() {
			if err != nil {
				return err
			}
			return errPollTimeout
		}
		if !rt.Again(ctx, err) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err // the server left it unanswered for the retry budget
		}
	}
}

// pauseConsumer calls the server's consumer pause API: pause until until,
// or resume when it is zero.
func pauseConsumer(ctx context.Context, js jetstream.JetStream, stream, consumer string, until time.Time, timeout time.Duration) error {
	body := []byte("{}")
	if !until.IsZero() {
		var err error
		if body, err = json.Marshal(map[string]time.Time{"pause_until": until.UTC()}); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := request(ctx, js, fmt.Sprintf("CONSUMER.PAUSE.%s.%s", stream, consumer), body)
	return err
}

// withoutPause drops the pause time from a configuration, for comparing
// a consumer a change paused with the configuration it recorded.
func (c rawConfig) withoutPause() rawConfig {
	out := c.clone()
	delete(out, "pause_until")
	return out
}
