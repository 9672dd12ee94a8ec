package reset

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The steps below make one change each and follow up a lost reply: they
// look at what the server holds and finish, retrying within
// Options.Settle (the client reconnects on its own after a server restart).
// Each returns an outcome (see execute.go) with its error.

// holdInactive is how long an interest holder outlives a jsctl that died
// during a recreate: the window for `consumer recover`, which deletes it.
const holdInactive = time.Hour

// applyReset moves the consumer in place with the server's reset API.
func (x *executor) applyReset(ctx context.Context, c *Change, in *Intent) (outcome, error) {
	seq := c.To.Sequence
	if seq == c.state.info.AckFloor.Stream+1 {
		// Back to the ack floor is allowed for every deliver policy, but
		// only as the server's own "reset to the ack floor" (seq 0). The
		// floor is the consumer's now (c.state): a floor that moved on
		// since the plan (or the interrupted run) is no longer the target.
		if ok, _, err := x.startAllows(ctx, c, c.state.info.Config, seq); err != nil || !ok {
			seq = 0
		}
	}
	out, err := x.resetSure(ctx, c, seq, c.To.Sequence)
	if out == unchanged && errors.Is(err, jsutil.ErrPermission) {
		err = jsutil.Wrap(err, "reset consumer %q on %q (nothing changed)", c.Consumer, c.Stream)
	}
	return out, err
}

// resetSure calls the reset API (seq 0: to the ack floor) so that the next
// delivery is want. It returns done with the reset reply as proof,
// unchanged when the server refused or denied it or has no reset API
// (the caller may fall back), or unsettled.
func (x *executor) resetSure(ctx context.Context, c *Change, seq, want uint64) (outcome, error) {
	rt := jsutil.RetryUntil(x.opts.Settle)
	for {
		actx, cancel := context.WithTimeout(ctx, x.opts.Timeout)
		r, err := x.opts.inPlace(actx, x.js, c.Stream, c.Consumer, seq)
		cancel()
		if err == nil && x.opts.lose != nil && x.opts.lose("reset") {
			r, err = nil, nats.ErrTimeout
		}
		if err == nil {
			c.proof, c.proofKind, c.resetSeq = r.state, "reset reply", r.ResetSeq
			return done, nil
		}
		switch {
		case errors.Is(err, jsutil.ErrPermission):
			// Refused: this reset changed nothing; the caller says what
			// that means for the change (applyReset: nothing changed;
			// after a create: the change is unfinished).
			return unchanged, err
		case ctx.Err() != nil:
			return unsettled, unsettledErr(c, "reset", err)
		case lacksResetAPI(err):
			// Nobody serves the consumer's reset subject: a server without
			// the API, a replicated consumer without a leader just now, or
			// a server still loading its consumers after a restart. Only
			// a consumer that is there, with a leader, twice unanswered,
			// shows the API is missing.
			st, lerr := x.load(ctx, c)
			switch {
			case lerr != nil && !lost(lerr):
				return unchanged, wrapConsumer(lerr, c.Stream, c.Consumer)
			case lerr == nil && rt.Attempt() >= 1 && !x.waitLeader(ctx, c, st):
				return unchanged, wrapConsumer(err, c.Stream, c.Consumer)
			case lerr == nil && rt.Attempt() >= 3:
				return unchanged, wrapConsumer(err, c.Stream, c.Consumer)
			}
		case lost(err):
			c.unsure = true
			// Applied with its reply lost, or not applied: look.
			if st, lerr := x.load(ctx, c); lerr == nil && x.atTarget(ctx, c, st.info, want) {
				c.proof, c.proofKind = st, "consumer info (the reset reply was lost)"
				return done, nil
			}
		case errors.Is(err, jetstream.ErrConsumerInvalidReset):
			// The consumer's deliver policy does not allow that sequence:
			// a conflict between target and configuration, as the plan's
			// refusal of --method reset says, not bad input.
			return unchanged, jsutil.Errorf(jsutil.ErrConflict, "reset consumer %q on %q: its deliver policy does not allow an in-place reset to sequence %d (nothing changed): %w",
				c.Consumer, c.Stream, seq, err)
		default:
			return unchanged, wrapConsumer(err, c.Stream, c.Consumer)
		}
		if !rt.Again(ctx, err) {
			return unsettled, unsettledErr(c, "reset", err)
		}
	}
}

// applyRecreate deletes the consumer (st) and creates it from the intent's
// new configuration. A failure after the delete puts the consumer back at
// its old position where it can.
func (x *executor) applyRecreate(ctx context.Context, c *Change, in *Intent, st *consumerState) (outcome, error) {
	oldCfg := st.raw.withoutServerMetadata()
	// Permission check before anything is deleted: creating the consumer
	// with its own configuration is a no-op the server must authorise.
	if err := x.checkCreate(ctx, c, st.raw); err != nil {
		return unchanged, jsutil.Wrap(err, "reset consumer %q on %q: check before delete (nothing changed)", c.Consumer, c.Stream)
	}
	// On an interest stream, deleting the only interested consumer removes
	// its messages: a short-lived holder keeps interest meanwhile.
	if in.Hold != "" {
		if err := x.hold(ctx, c, in.Hold, min(c.To.Sequence, c.From.AckFloor+1)); err != nil {
			return unchanged, jsutil.Wrap(err, "reset consumer %q on %q: keep interest during the recreate (nothing changed)", c.Consumer, c.Stream)
		}
	}
	out, err := x.deleteSure(ctx, c, st.createdAt())
	if out != done {
		return out, err
	}
	if x.crash("deleted") {
		return crashed, errCrashed
	}
	var cause error
	if x.opts.beforeCreate != nil {
		cause = x.opts.beforeCreate()
	}
	if cause == nil {
		if out, err = x.createAt(ctx, c, in); out != unchanged {
			return out, err
		}
		cause = err
	}
	return x.restore(ctx, c, oldCfg, cause)
}

// checkCreate asks the server to create the consumer with its own
// configuration (a no-op), retrying a lost reply within Settle.
func (x *executor) checkCreate(ctx context.Context, c *Change, cfg rawConfig) error {
	rt := jsutil.RetryUntil(x.opts.Settle)
	for {
		_, err := x.create(ctx, c, cfg)
		if err == nil || consumerExists(err) {
			return nil
		}
		c.unsure = c.unsure || lost(err)
		if !lost(err) || !rt.Again(ctx, err) {
			return err
		}
	}
}

// createAt creates the absent consumer from the intent's new configuration
// (and moves it to the target where the intent says so).
func (x *executor) createAt(ctx context.Context, c *Change, in *Intent) (outcome, error) {
	cfg, move, err := in.creates()
	if err != nil {
		return unchanged, err
	}
	if out, err := x.createSure(ctx, c, cfg); out != done {
		return out, err
	}
	if x.crash("created") {
		return crashed, errCrashed
	}
	if !move {
		return done, nil
	}
	return x.moveCreated(ctx, c, cfg)
}

// creates is what recreating the consumer of in makes: the new
// configuration, or (for an in-place reset whose consumer went missing)
// the recorded one; move says it is then moved to the target in place.
func (in *Intent) creates() (rawConfig, bool, error) {
	src, move := in.NewConfig, in.MoveAfterCreate
	if len(src) == 0 {
		src, move = in.Config, true
	}
	cfg, err := rawOf(src)
	if err != nil || len(cfg) == 0 {
		return nil, false, jsutil.Errorf(jsutil.ErrBadInput, "consumer %q on %q: the intent record has no configuration to create it from (%v)", in.Consumer, in.Stream, err)
	}
	return cfg.withoutServerMetadata(), move, nil
}

// moveCreated moves a consumer just created with its own start to the
// target in place; where its policy does not allow that it starts it by
// sequence instead.
func (x *executor) moveCreated(ctx context.Context, c *Change, cfg rawConfig) (outcome, error) {
	created := c.proof.createdAt()
	out, err := x.resetSure(ctx, c, c.To.Sequence, c.To.Sequence)
	if out != unchanged {
		return out, err
	}
	if !errors.Is(err, jetstream.ErrConsumerInvalidReset) && !lacksResetAPI(err) {
		return unsettled, unsettledErr(c, "move to the target", err)
	}
	c.warn("could not move the consumer with its deliver policy %s; it starts by sequence instead", cfg.start().DeliverPolicy)
	c.resetSeq = 0
	if out, err := x.deleteSure(ctx, c, created); out != done {
		return unsettled, unsettledErr(c, "start by sequence", err)
	}
	if out, err := x.createSure(ctx, c, cfg.withStart(c.To.Sequence, time.Time{})); out != done {
		return unsettled, unsettledErr(c, "start by sequence", err)
	}
	return done, nil
}

// deleteSure deletes the consumer that was created at created, and no
// other: each attempt first reads the consumer, and one created at another
// time (recreated since by someone else, or by another run finishing the
// same change) is left as it is. done: it is gone; unchanged: refused or
// denied, it is still there; unsettled.
func (x *executor) deleteSure(ctx context.Context, c *Change, created *time.Time) (outcome, error) {
	rt := jsutil.RetryUntil(x.opts.Settle)
	sent := false // a delete was sent that may have been applied
	for {
		st, lerr := x.load(ctx, c)
		switch {
		case errors.Is(lerr, jetstream.ErrConsumerNotFound):
			return done, nil
		case lerr == nil && !st.madeAt(created) && !sent:
			why := jsutil.RecordedConsumer(c.Stream, c.Consumer, created).Check(st.identity(), "it was read")
			if why == nil { // a creation time not known: another consumer all the same
				why = fmt.Errorf("it was created again by someone else since it was read (created %s now)", timeText(st.createdAt()))
			}
			return unchanged, jsutil.Errorf(jsutil.ErrConflict, "reset consumer %q on %q: %w; nothing changed: see %s", c.Consumer, c.Stream, why, RecoverCommand(c.Stream, c.Consumer))
		case lerr == nil && !st.madeAt(created):
			return unsettled, jsutil.Errorf(jsutil.ErrConflict, "reset consumer %q on %q: someone else recreated it during the change; left as it is: see %s", c.Consumer, c.Stream, RecoverCommand(c.Stream, c.Consumer))
		case lerr != nil && !lost(lerr) && !sent:
			return unchanged, wrapConsumer(lerr, c.Stream, c.Consumer)
		case lerr == nil:
			err := x.delete(ctx, c)
			if err == nil && x.opts.lose != nil && x.opts.lose("delete") {
				err = nats.ErrTimeout
			}
			switch {
			case err == nil, errors.Is(err, jetstream.ErrConsumerNotFound):
				return done, nil
			case errors.Is(err, jsutil.ErrPermission):
				return unchanged, jsutil.Wrap(err, "reset consumer %q on %q: delete (nothing changed)", c.Consumer, c.Stream)
			case !lost(err):
				return unchanged, wrapConsumer(err, c.Stream, c.Consumer)
			}
			// Applied with its reply lost, or not: look again.
			sent, c.unsure = true, true
			lerr = err
		}
		if !rt.Again(ctx, lerr) {
			if !sent {
				return unchanged, wrapConsumer(lerr, c.Stream, c.Consumer)
			}
			return unsettled, unsettledErr(c, "delete", lerr)
		}
	}
}

// createSure creates the consumer from cfg. done: it exists with cfg, and
// c.proof holds the create reply (or its info where the reply was lost);
// unchanged: refused or denied, not created; unsettled. The change's
// intent says, before the create, that it creates one and, after it, when
// (see noteCreating).
func (x *executor) createSure(ctx context.Context, c *Change, cfg rawConfig) (outcome, error) {
	if err := x.noteCreating(ctx, c); err != nil {
		return unchanged, err
	}
	out, err := x.createOnce(ctx, c, cfg)
	if out == done {
		x.noteCreated(ctx, c)
	}
	return out, err
}

func (x *executor) createOnce(ctx context.Context, c *Change, cfg rawConfig) (outcome, error) {
	rt := jsutil.RetryUntil(x.opts.Settle)
	for {
		st, err := x.create(ctx, c, cfg)
		if err == nil && x.opts.lose != nil && x.opts.lose("create") {
			st, err = nil, nats.ErrTimeout
		}
		switch {
		case err == nil:
			c.proof, c.proofKind = st, "create reply"
			return x.confirmCreate(ctx, c, cfg, rt)
		case errors.Is(err, jsutil.ErrPermission):
			return unchanged, jsutil.Wrap(err, "create consumer %q on %q", c.Consumer, c.Stream)
		case ctx.Err() != nil:
			return unsettled, unsettledErr(c, "create", err)
		case !lost(err) && !consumerExists(err):
			return unchanged, jsutil.Wrap(err, "create consumer %q on %q", c.Consumer, c.Stream)
		}
		// Created with its reply lost, or not: look.
		c.unsure = c.unsure || lost(err)
		cur, lerr := x.load(ctx, c)
		switch {
		case lerr == nil && sameExceptStart(cur.raw, cfg) && sameStart(cur.raw, cfg):
			c.proof, c.proofKind = cur, "consumer info (the create reply was lost)"
			return x.confirmCreate(ctx, c, cfg, rt)
		case lerr == nil:
			return unchanged, jsutil.Errorf(jsutil.ErrConflict, "create consumer %q on %q: a consumer of that name exists with another configuration", c.Consumer, c.Stream)
		}
		if !rt.Again(ctx, err) {
			return unsettled, unsettledErr(c, "create", err)
		}
	}
}

// confirmCreate sends the create once more, with the same configuration.
// The server then writes the consumer's metadata and its checksum again.
// A server killed in the middle of a create (or a delete) leaves the
// consumer's directory with a metadata file and no checksum; a later
// create of that name keeps the old file (nats-server writes it only when
// there is none) and never writes the checksum, so the consumer works but
// is dropped at the next restart. Updating it rewrites both files.
//
// Only a change that may follow a server crash needs it: one that lost a
// reply, a create from a saved configuration (the consumer may be missing
// because of such a directory) and everything recover does.
func (x *executor) confirmCreate(ctx context.Context, c *Change, cfg rawConfig, rt *jsutil.Retrier) (outcome, error) {
	if !c.unsure {
		return done, nil
	}
	for {
		_, err := x.create(ctx, c, cfg)
		switch {
		case err == nil:
			return done, nil
		case ctx.Err() != nil:
			return unsettled, unsettledErr(c, "create", err)
		case !lost(err):
			return unsettled, unsettledErr(c, "create (writing the consumer's metadata again)", err)
		}
		if !rt.Again(ctx, err) {
			return unsettled, unsettledErr(c, "create", err)
		}
	}
}

// restore creates the consumer again with its old configuration and moves
// it back to its old ack floor, after a recreate failed (cause).
func (x *executor) restore(ctx context.Context, c *Change, oldCfg rawConfig, cause error) (outcome, error) {
	cause = jsutil.Wrap(cause, "reset consumer %q on %q: recreate failed", c.Consumer, c.Stream)
	ctx = context.WithoutCancel(ctx)
	next := c.From.AckFloor + 1
	out, err := x.createSure(ctx, c, oldCfg)
	if out == done {
		if out, err = x.resetSure(ctx, c, next, next); out == unchanged {
			// The old deliver policy does not allow it in place: start
			// by sequence.
			if out, err = x.deleteSure(ctx, c, c.proof.createdAt()); out == done {
				out, err = x.createSure(ctx, c, oldCfg.withStart(next, time.Time{}))
			}
		}
	}
	c.proof, c.resetSeq = nil, 0
	if out != done {
		return unsettled, fmt.Errorf("%w; restoring it also failed (%v): the consumer may be deleted: finish the change with: %s", cause, err, RecoverCommand(c.Stream, c.Consumer))
	}
	c.Restored = true
	return restored, fmt.Errorf("%w; restored it at its old position (next delivery %d)", cause, next)
}

// hold creates a consumer that keeps interest in the stream's messages from
// seq on; it expires after holdInactive if nobody deletes it.
func (x *executor) hold(ctx context.Context, c *Change, name string, seq uint64) error {
	cfg := jetstream.ConsumerConfig{
		Name:              name,
		Description:       fmt.Sprintf("jsctl: keeps interest while consumer %q is recreated", c.Consumer),
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       max(seq, 1),
		AckPolicy:         jetstream.AckExplicitPolicy,
		InactiveThreshold: holdInactive,
	}
	if len(c.Filters) == 1 {
		cfg.FilterSubject = c.Filters[0]
	} else {
		cfg.FilterSubjects = c.Filters
	}
	// The subject nats.go sends the create to, for telling a denied
	// request from a lost reply.
	subject := jsutil.APIPrefix(x.js.Options()) + "CONSUMER.CREATE." + c.Stream + "." + name
	if cfg.FilterSubject != "" {
		subject += "." + cfg.FilterSubject
	}
	ctx, cancel := context.WithTimeout(ctx, x.opts.Timeout)
	defer cancel()
	wctx, stop := jsutil.EndOnRefusal(ctx, subject)
	_, err := x.stream.CreateConsumer(wctx, cfg)
	err = jsutil.RefusedCause(wctx, err)
	stop()
	return jsutil.RequestError(x.js.Conn(), subject, err)
}

// load, create and delete are the raw requests, each bounded by
// Options.Timeout: the steps above retry them within Settle.
func (x *executor) load(ctx context.Context, c *Change) (*consumerState, error) {
	ctx, cancel := context.WithTimeout(ctx, x.opts.Timeout)
	defer cancel()
	return loadConsumer(ctx, x.js, c.Stream, c.Consumer)
}

// loadSure is load retried within Settle while the server does not
// answer (a leader election, a restart).
func (x *executor) loadSure(ctx context.Context, c *Change) (*consumerState, error) {
	rt := jsutil.RetryUntil(x.opts.Settle)
	for {
		st, err := x.load(ctx, c)
		if err == nil || !lost(err) || !rt.Again(ctx, err) {
			return st, err
		}
	}
}

func (x *executor) create(ctx context.Context, c *Change, cfg rawConfig) (*consumerState, error) {
	ctx, cancel := context.WithTimeout(ctx, x.opts.Timeout)
	defer cancel()
	return createConsumer(ctx, x.js, c.Stream, c.Consumer, cfg)
}

func (x *executor) delete(ctx context.Context, c *Change) error {
	ctx, cancel := context.WithTimeout(ctx, x.opts.Timeout)
	defer cancel()
	return deleteConsumer(ctx, x.js, c.Stream, c.Consumer)
}

// unsettledErr says that a change could not be finished: the consumer may
// be deleted, and recover finishes it.
//
// A step the server's permissions refused was answered: it was not
// applied, and the steps before it were. That is said as one outcome, the
// refusal naming the operation and its subject.
func unsettledErr(c *Change, step string, err error) error {
	if errors.Is(err, jsutil.ErrPermission) {
		return fmt.Errorf("reset consumer %q on %q: the %s was refused, after the steps before it were applied, so the change is unfinished: %w; once this user may, finish it with: %s",
			c.Consumer, c.Stream, step, err, RecoverCommand(c.Stream, c.Consumer))
	}
	return fmt.Errorf("%w; the consumer may be deleted or half changed: finish the change with: %s",
		jsutil.Wrap(err, "reset consumer %q on %q: could not find out whether the %s was applied", c.Consumer, c.Stream, step),
		RecoverCommand(c.Stream, c.Consumer))
}

func consumerExists(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) &&
		(apiErr.ErrorCode == jetstream.JSErrCodeConsumerExists || apiErr.ErrorCode == jetstream.JSErrCodeConsumerNameExists)
}

// waitLeader polls the consumer's info (at most 10s) until it reports a
// leader; it returns false at once for a consumer that is not replicated.
func (x *executor) waitLeader(ctx context.Context, c *Change, st *consumerState) bool {
	rt := jsutil.RetryEvery(10*time.Second, 50*time.Millisecond)
	for {
		if st != nil {
			cl := st.info.Cluster
			if cl == nil || len(cl.Replicas) == 0 {
				return false
			}
			if cl.Leader != "" {
				return true
			}
		}
		if !rt.Again(ctx, nil) {
			return false
		}
		st, _ = x.load(ctx, c)
	}
}
