package reset

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"
)

// Execute applies a plan. For each change it writes an intent record, makes
// the change (in place, or delete and create), verifies it from the
// server's own reply, records it in history and completes the intent. A
// reply lost to a server restart or leader election is followed up: jsctl
// finds out what the server did and finishes (or puts the consumer back)
// within Options.Settle. What it cannot finish stays in the intent record
// for `jsctl consumer recover`.
//
// A consumer that moved since the plan was made is refused as stale
// (jsutil.ErrConflict, nothing changed), except for its clients' progress
// under Options.Force or Options.Pause: see sincePlan.
//
// Nothing is changed when the plan has a refusal (Plan.Err). The first
// change runs alone; the others then run Options.Concurrency at a time, and
// none is started after one fails. The error names the consumer, and the
// change's Error and Restored fields say what happened.
func Execute(ctx context.Context, js jetstream.JetStream, plan *Plan, opts Options) error {
	opts = opts.withDefaults()
	if err := plan.Err(); err != nil {
		return err
	}
	if len(plan.Changes) == 0 {
		plan.Executed = true
		return nil
	}
	p, err := newPlanner(ctx, js, plan.Stream, opts)
	if err != nil {
		return jsutil.Wrap(err, "reset consumers on %q", plan.Stream)
	}
	if err := p.checkPlanStream(plan); err != nil {
		return err
	}
	plan.Executed = true
	x := &executor{planner: p}
	n := len(plan.Changes)
	errs := make([]error, n)
	var stop atomic.Bool
	t := jsutil.NewTally(p.opts.Progress, n)
	t.Start()
	run := func(i int) {
		c := plan.Changes[i]
		if err := x.executeOne(ctx, plan, c); err != nil {
			c.Error = err.Error()
			errs[i] = err
			stop.Store(true)
		}
		t.Step()
	}
	run(0)
	var g errgroup.Group
	g.SetLimit(opts.Concurrency)
	for i := 1; i < n && !stop.Load() && ctx.Err() == nil; i++ {
		g.Go(func() error {
			if !stop.Load() { // a change failed while this one waited
				run(i)
			}
			return nil
		})
	}
	_ = g.Wait() // errors are in errs
	var first error
	failed := 0
	for _, err := range errs {
		if err != nil {
			if first == nil {
				first = err
			}
			failed++
		}
	}
	if failed > 1 {
		return fmt.Errorf("%w (and %d more consumers failed)", first, failed-1)
	}
	if first == nil && ctx.Err() != nil {
		return jsutil.Wrap(ctx.Err(), "reset consumers on %q", plan.Stream)
	}
	return first
}

// executor makes changes; Execute and Recover share it.
type executor struct {
	*planner
	// lacksAPI is set once the server showed it has no reset API.
	lacksAPI atomic.Bool
}

// outcome is what an attempt at a change left on the server.
type outcome int

const (
	unchanged outcome = iota // nothing changed (refused, denied): the intent can go
	done                     // the change was made
	restored                 // the change failed and the consumer was put back
	unsettled                // unknown or half done: the intent stays for recover
	crashed                  // a test's simulated crash: leave everything as it is
)

var errCrashed = errors.New("simulated crash")

func (x *executor) crash(step string) bool { return x.opts.crash != nil && x.opts.crash(step) }

func (x *executor) executeOne(ctx context.Context, plan *Plan, c *Change) error {
	in := &Intent{
		ID: newID(), Stream: c.Stream, Consumer: c.Consumer, Method: c.Method, Target: plan.Target,
		From: c.From, To: c.To, StartTime: c.StartTime, UndoOf: c.UndoOf,
		Time: x.opts.Now().UTC(), User: x.opts.User, Host: x.opts.Host, Reason: x.opts.Reason,
		AcksBucket: x.opts.AcksBucket, AcksScope: x.opts.AcksScope, Auto: x.opts.Method == Auto,
		StreamCreated: x.streamCreated(),
	}
	var st *consumerState
	if c.Method == Create {
		if _, err := x.loadSure(ctx, c); err == nil {
			return jsutil.Errorf(jsutil.ErrConflict, "create consumer %q on %q: it exists now (it did not when the plan was made); nothing changed", c.Consumer, c.Stream)
		} else if !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return wrapConsumer(err, c.Stream, c.Consumer)
		}
		if err := x.createIntent(ctx, c, in); err != nil {
			return err
		}
		in.Forget = x.forgetRange(c)
		c.unsure = true // it may be missing because a crash half wrote it
	} else {
		// The intent keeps exactly what the server holds now.
		var err error
		if st, err = x.loadSure(ctx, c); err != nil {
			return wrapConsumer(err, c.Stream, c.Consumer)
		}
		if why := consumerCheck(c, st); why != nil {
			return jsutil.Errorf(jsutil.ErrConflict, "reset consumer %q on %q: %w; nothing changed: plan again", c.Consumer, c.Stream, why)
		}
		if _, err := x.fromNow(ctx, c, st, "since the plan was made"); err != nil {
			return err
		}
		in.From = c.From
		c.state = st
		in.Config, in.Created = st.raw.json(), st.createdAt()
		in.FromStart = startOf(st.info.Config)
		in.Forget = x.forgetRange(c)
		in.Pause = x.pauseIntent(c, st)
		if c.Method == Reset && x.lacksAPI.Load() && x.opts.Method == Auto {
			c.Method, c.Reason = Recreate, "the server has no consumer reset API"
		}
		in.Method = c.Method
		if c.Method == Recreate {
			x.recreateIntent(c, in, st)
		}
	}
	if err := x.intents.begin(ctx, in); err != nil {
		return err
	}
	c.ChangeID, c.intent = in.ID, in
	if x.crash("intent") {
		return errCrashed
	}
	if in.Pause != nil {
		pst, err := x.beginPause(ctx, c, in)
		if err == nil {
			err = x.afterPause(ctx, c, in, pst)
		}
		if err != nil {
			return x.conclude(ctx, c, in, unchanged, err)
		}
		st = pst
		if x.crash("paused") {
			return errCrashed
		}
	}
	if err := x.forgetAcks(ctx, c, in.Forget); err != nil {
		return x.conclude(ctx, c, in, unchanged, err)
	}
	if err := x.noteForward(ctx, c, in, st); err != nil {
		return x.conclude(ctx, c, in, unchanged, err)
	}
	var out outcome
	var err error
	switch c.Method {
	case Create:
		out, err = x.createAt(ctx, c, in)
	case Reset:
		out, err = x.resetOrRecreate(ctx, c, in, st)
	default:
		out, err = x.applyRecreate(ctx, c, in, st)
	}
	return x.conclude(ctx, c, in, out, err)
}

// resetOrRecreate resets the consumer in place and, where the change's
// method was picked by auto (in.Auto) and the reset could not be made (see
// fallBack), recreates it instead from st, the consumer as it is now.
// Execute and recover both finish an in-place change this way.
func (x *executor) resetOrRecreate(ctx context.Context, c *Change, in *Intent, st *consumerState) (outcome, error) {
	out, err := x.applyReset(ctx, c, in)
	if out != unchanged || err == nil || !in.Auto || !x.fallBack(c, err) {
		return out, err
	}
	x.recreateIntent(c, in, st)
	if uerr := x.intents.update(ctx, in); uerr != nil {
		return unchanged, uerr
	}
	return x.applyRecreate(ctx, c, in, st)
}

// fallBack decides, after an in-place reset failed and changed nothing,
// whether auto recreates instead: only where the server has no reset API
// or refused the sequence, never after a denial, and never on a
// work-queue stream (which takes no consumer started by sequence or time).
func (x *executor) fallBack(c *Change, err error) bool {
	switch {
	case errors.Is(err, jsutil.ErrPermission):
		return false
	case !lacksResetAPI(err) && !errors.Is(err, jetstream.ErrConsumerInvalidReset):
		return false
	case x.info.Config.Retention == jetstream.WorkQueuePolicy:
		c.warn("no recreate to fall back to: a work-queue stream takes only consumers with deliver policy all")
		return false
	case lacksResetAPI(err):
		x.lacksAPI.Store(true)
		c.Method = Recreate
		c.Reason = fmt.Sprintf("the server has no consumer reset API (%v)", err)
		return true
	case errors.Is(err, jetstream.ErrConsumerInvalidReset):
		c.Method = Recreate
		c.Reason = "the server refused an in-place reset to this sequence"
		return true
	}
	return false
}

// afterPause takes the consumer as it is once paused (st): a live client
// may have moved it since it was read (fromNow decides), and the intent
// records where it really was before the change (undo returns there).
func (x *executor) afterPause(ctx context.Context, c *Change, in *Intent, st *consumerState) error {
	c.state = st
	moved, err := x.fromNow(ctx, c, st, "until it was paused")
	if err != nil || !moved {
		return err
	}
	in.From, in.Forget = c.From, x.forgetRange(c)
	return x.intents.update(ctx, in)
}

// fromNow compares the consumer as it is now (st) with the position its
// change starts from (c.From, the plan's) by the one rule of sincePlan. A
// move it accepts (a client's progress) becomes c.From, with a warning
// naming when it happened, and moved is true; the target stays as
// planned. A refusal is a jsutil.ErrConflict: nothing was changed.
func (x *executor) fromNow(ctx context.Context, c *Change, st *consumerState, when string) (moved bool, err error) {
	d, a := st.info.Delivered.Stream, st.info.AckFloor.Stream
	if d == c.From.Delivered && a == c.From.AckFloor {
		return false, nil
	}
	if why := x.opts.sincePlan(c.From, d, a); why != "" {
		return false, jsutil.Errorf(jsutil.ErrConflict, "reset consumer %q on %q: %s; nothing changed: plan again", c.Consumer, c.Stream, why)
	}
	c.warn("a client moved it on %s (delivered %d, ack floor %d; planned from %d and %d); the target stays %d as planned", when, d, a, c.From.Delivered, c.From.AckFloor, c.To.Sequence)
	c.From = From{Delivered: d, AckFloor: a}
	x.timeOf(ctx, c, &c.From.AckFloorTime, a, "ack floor")
	return true, nil
}

// sincePlan is the one rule for a consumer that may have moved since its
// plan was made (Execute, before and after a pause; Replan, for a saved
// plan): d and a are its delivered and ack floor stream sequences now.
// It returns "" where the change may go on from there: unmoved, or moved
// only forward where clients are expected to move it (Options.Force moves
// it under their feet; Options.Pause lets them read until it is paused),
// as their progress does. Anything else was someone else's move (another
// change; a client never moves a consumer back), after which the plan's
// position, counts and relative target no longer hold: the reason for
// refusing it.
func (o Options) sincePlan(planned From, d, a uint64) string {
	if d == planned.Delivered && a == planned.AckFloor {
		return ""
	}
	saw := fmt.Sprintf("delivered %d, ack floor %d; the plan saw %d and %d", d, a, planned.Delivered, planned.AckFloor)
	switch {
	case !o.Force && !o.Pause:
		return "moved since the plan was made (" + saw + ")"
	case d < planned.Delivered || a < planned.AckFloor:
		return "moved back since the plan was made (" + saw + "), as no client moves it (another change?)"
	}
	return ""
}

// recreateIntent fills in what a recreate will create.
func (x *executor) recreateIntent(c *Change, in *Intent, st *consumerState) {
	oldCfg := st.raw.withoutServerMetadata()
	if in.Pause != nil {
		// Created paused, as the consumer is during the change.
		oldCfg.set("pause_until", in.Pause.Until)
	}
	var start time.Time
	if c.StartTime != nil {
		start = *c.StartTime
	}
	in.Method = Recreate
	in.NewConfig, in.MoveAfterCreate = oldCfg.withStart(c.To.Sequence, start).json(), false
	if c.RestoreStart != nil {
		in.NewConfig, in.MoveAfterCreate = oldCfg.withStartConfig(*c.RestoreStart).json(), true
	}
	if x.info.Config.Retention == jetstream.InterestPolicy {
		in.Hold = TempPrefix + "hold_" + in.ID
	}
}

// conclude finishes a change after its attempt: verify, record, complete
// the intent, as far as the outcome allows.
func (x *executor) conclude(ctx context.Context, c *Change, in *Intent, out outcome, err error) error {
	switch out {
	case crashed:
		return err
	case unsettled:
		x.ended(ctx, c, in, OutcomeLeft, err)
		return err
	case unchanged, restored:
		if out == restored {
			x.ended(ctx, c, in, OutcomeFailed, err)
		}
		if c.pauseSent {
			// Nothing changed (or it was put back): resume it, even
			// with --keep-paused. Left paused, the intent stays.
			if perr := x.endPause(ctx, c, in, true); perr != nil {
				return fmt.Errorf("%w; it is left paused (resuming it failed: %v): %s resumes it", err, perr, RecoverCommand(c.Stream, c.Consumer))
			}
		}
		if cerr := x.intents.complete(ctx, in); cerr != nil {
			c.warn("the intent record could not be removed (%v); %s clears it", cerr, RecoverCommand(c.Stream, c.Consumer))
		}
		x.releaseHold(ctx, in)
		return err
	}
	c.Applied = true
	x.verify(ctx, c)
	if x.crash("applied") {
		return errCrashed
	}
	_, err = x.recordAndComplete(ctx, c, in, false)
	return err
}

// recordAndComplete writes the history record and removes the intent;
// recorded says the history has the change. A recovered change is
// recorded only where the history does not hold it yet (another run may
// have finished it since this one looked), so each change is recorded
// once.
func (x *executor) recordAndComplete(ctx context.Context, c *Change, in *Intent, recovered bool) (bool, error) {
	var newCfg []byte
	if c.proof != nil {
		cfg := c.proof.raw
		if in.Pause != nil && in.Pause.Resume {
			cfg = cfg.withoutPause() // resumed below
		}
		newCfg = cfg.json()
	}
	var err error
	if recovered && x.inHistory(ctx, in) {
		c.warn("the change is in history already (recorded by another run meanwhile): not recorded again")
	} else {
		err = x.record(ctx, Record{
			Stream: c.Stream, Consumer: c.Consumer, Time: x.opts.Now().UTC(), Method: c.Method,
			Target: in.Target, From: c.From, To: c.To, Verified: c.Verified, UndoOf: c.UndoOf,
			FromStart: in.FromStart, User: in.User, Host: in.Host,
			ChangeID: in.ID, Config: in.Config, NewConfig: newCfg, Recovered: recovered, Reason: in.Reason,
			StreamCreated: in.StreamCreated, Created: in.Created, NewCreated: newCreated(c, in),
		})
	}
	if err != nil {
		c.warn("the change was made but not recorded in history (%v); %s records it", err, RecoverCommand(c.Stream, c.Consumer))
		return false, nil
	}
	if x.crash("recorded") {
		return true, errCrashed
	}
	if err := x.endPause(ctx, c, in, false); err != nil {
		return true, jsutil.Wrap(err, "reset consumer %q on %q: the change was made and recorded, but resuming the consumer failed: it is left paused until %s resumes it", c.Consumer, c.Stream, RecoverCommand(c.Stream, c.Consumer))
	}
	switch {
	case recovered:
		x.ended(ctx, c, in, OutcomeRecovered, nil)
	case c.Verified:
		x.ended(ctx, c, in, OutcomeVerified, nil)
	default:
		x.ended(ctx, c, in, OutcomeFailed, errors.New("the change was applied but not verified"))
	}
	if x.crash("ended") {
		return true, errCrashed
	}
	if err := x.intents.complete(ctx, in); err != nil {
		c.warn("the change was made and recorded, but its intent record could not be removed (%v); %s clears it", err, RecoverCommand(c.Stream, c.Consumer))
	}
	x.releaseHold(ctx, in)
	return true, nil
}

// The outcomes Options.Ended is told.
const (
	OutcomeVerified  = "verified"
	OutcomeFailed    = "failed"
	OutcomeLeft      = "left"
	OutcomeRecovered = "recovered"
)

// Ended is a change whose outcome is known (Options.Ended).
type Ended struct {
	Change *Change
	// Outcome is one of the Outcome constants.
	Outcome string
	// ID identifies the outcome: the change's id, or for OutcomeRecovered
	// the id of the recover run's claim.
	ID string
	// Recovers is, for OutcomeRecovered, the interrupted change's id.
	Recovers string
	// Target is the change's target in words.
	Target string
	// Err is why it failed or was left, nil otherwise.
	Err error
}

// ended tells Options.Ended of a change's outcome.
func (x *executor) ended(ctx context.Context, c *Change, in *Intent, outcome string, err error) {
	if x.opts.Ended == nil {
		return
	}
	e := Ended{Change: c, Outcome: outcome, ID: in.ID, Target: in.Target.String(), Err: err}
	if outcome == OutcomeRecovered {
		e.ID, e.Recovers = in.Claim.id(), in.ID
		if e.ID == "" {
			e.ID = newID()
		}
	}
	x.opts.Ended(context.WithoutCancel(ctx), e)
}

// inHistory reports whether the history holds the change of in (false
// where it cannot be read: record then tries).
func (x *executor) inHistory(ctx context.Context, in *Intent) bool {
	ok, err := recorded(ctx, x.js, x.opts.HistoryBucket, in.Stream, in.Consumer, in.ID)
	return err == nil && ok
}

// releaseHold deletes the interest holder of a recreate, if any.
func (x *executor) releaseHold(ctx context.Context, in *Intent) {
	if in.Hold == "" {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
	defer cancel()
	_ = deleteConsumer(dctx, x.js, in.Stream, in.Hold)
}

// verify sets Verified from the server's reply to the change (the reset
// reply's reset_seq, or the create reply's position), then reads the
// consumer's info once more only to report what a live client took since.
func (x *executor) verify(ctx context.Context, c *Change) {
	want := c.To.Sequence
	switch {
	case c.resetSeq > 0:
		c.Verified = c.resetSeq == want
		if !c.Verified {
			c.warn("not verified: the server reset the consumer to %d, expected %d", c.resetSeq, want)
		}
	case c.proof != nil:
		c.Verified = x.atTarget(ctx, c, c.proof.info, want)
		if !c.Verified {
			c.warn("not verified: the server's %s shows delivered %d and ack floor %d, expected %d", c.proofKind, c.proof.info.Delivered.Stream, c.proof.info.AckFloor.Stream, want-1)
		}
	default:
		c.warn("not verified: no reply from the server shows the new position")
	}
	st, err := x.load(ctx, c)
	if err != nil || !c.Verified {
		return
	}
	if n := st.info.Delivered.Consumer; n > 0 && st.info.Delivered.Stream >= want {
		c.DeliveredSince = n
		c.warn("verified from the server's reply; a client has taken %d messages since (delivered up to %d)", n, st.info.Delivered.Stream)
	}
}

// atTarget reports whether info shows the consumer with nothing delivered
// since it was created or reset, and its next delivery at next.
func (x *executor) atTarget(ctx context.Context, c *Change, info *jetstream.ConsumerInfo, next uint64) bool {
	want := next - 1
	lower := want
	if c.StartTime != nil && next == c.To.Sequence && (c.Method == Recreate || c.Method == Create) {
		// A consumer started by time starts at the first message at or
		// after it on any subject; the first it delivers is the target.
		if s, _, err := x.opts.Seek(ctx, x.js, c.Stream, *c.StartTime, ModeAfter, ""); err == nil && s > 0 {
			lower = min(s-1, want)
		}
	}
	d, a := info.Delivered.Stream, info.AckFloor.Stream
	// A new replicated consumer may report an ack floor of 0 until
	// something is acknowledged: nothing is pending then.
	fresh := a == 0 && info.AckFloor.Consumer == 0 && info.NumAckPending == 0
	return info.Delivered.Consumer == 0 && (d == a || fresh) && d >= lower && d <= want
}
