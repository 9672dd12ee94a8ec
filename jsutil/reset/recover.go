package reset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// States of a consumer whose change was left unfinished (RecoverChange.State).
const (
	StateNoStream = "no-stream" // the stream is gone
	StateRecorded = "recorded"  // the change is in history; only its intent is left
	StateMissing  = "missing"   // the consumer does not exist
	StateOld      = "old"       // the consumer as the change found it (or put back): not changed yet
	StateNew      = "new"       // made by the change, not at the target
	StateTarget   = "at-target" // made by the change and at the target, not yet recorded
	StateOther    = "other"     // changed by someone else since: its configuration differs
)

// Actions that finishing a change takes (RecoverChange.Action).
const (
	ActCreate   = "create"   // create it from the recorded configuration at the target
	ActRecreate = "recreate" // delete and create it with the new configuration
	ActReset    = "reset"    // reset it in place to the target
	ActMove     = "move"     // move the new consumer to the target in place
	ActRecord   = "record"   // record the change in history
	ActClear    = "clear"    // only remove the intent record
	ActLeave    = "leave"    // leave the consumer as it is and remove the intent record
)

// RecoverChange is one unfinished change: what the server holds now, and
// what finishing it does.
type RecoverChange struct {
	ChangeID string    `json:"change_id"`
	Stream   string    `json:"stream"`
	Consumer string    `json:"consumer"`
	Method   Method    `json:"method"`
	Started  time.Time `json:"started"`
	User     string    `json:"user"`
	Host     string    `json:"host"`
	From     From      `json:"from"`
	To       To        `json:"to"`
	State    string    `json:"state"`
	Action   string    `json:"action"`
	// Reason says what was found, for people.
	Reason   string `json:"reason"`
	Applied  bool   `json:"applied"`
	Verified bool   `json:"verified"`
	Recorded bool   `json:"recorded"`
	Done     bool   `json:"done"`
	// Resume says the change paused the consumer (--pause) and finishing
	// it resumes it; Resumed that it was resumed.
	Resume  bool `json:"resume,omitempty"`
	Resumed bool `json:"resumed,omitempty"`
	// ConfigDiff is the configuration finishing the change applies: for a
	// recreate, the recorded new configuration against the consumer's
	// now; for a create, the recorded configuration against the server's
	// defaults (DefaultConfig). Fields that change where messages go or
	// whether they are acknowledged carry a warning (and are among
	// Warnings). The record is not proof of who wrote it: this is what
	// --execute applies.
	ConfigDiff []ConfigField `json:"config_diff,omitempty"`
	// Forget is the range of ack records finishing the change forgets
	// first (the change's --forget-acks), nil for none.
	Forget   *Forget  `json:"forget_acks,omitempty"`
	Warnings []string `json:"warnings"`
	Error    string   `json:"error,omitempty"`

	intent *Intent
	state  *consumerState
	// foreign says the consumer is not the one the change found or made
	// (another stream's, or someone else's): it is not touched, not even
	// resumed.
	foreign bool
}

// Recovery lists the unfinished changes of one stream and, once executed,
// what finishing them did.
type Recovery struct {
	Stream   string           `json:"stream"`
	Executed bool             `json:"executed"`
	Changes  []*RecoverChange `json:"changes"`
	// SkippedRecords lists the intent records that could not be used
	// (they do not parse, or hold impossible values): reported and
	// skipped, the other changes are still finished.
	SkippedRecords []BadRecord `json:"skipped_records"`
}

// PlanRecover lists the changes of stream's consumers (all, or those named)
// that an interrupted run left unfinished, what state each consumer is in
// and what finishing the change would do. Nothing changes on the server.
func PlanRecover(ctx context.Context, js jetstream.JetStream, stream string, consumers []string, opts Options) (*Recovery, error) {
	opts = opts.withDefaults()
	r := &Recovery{Stream: stream, Changes: []*RecoverChange{}, SkippedRecords: []BadRecord{}}
	p, err := newPlanner(ctx, js, stream, opts)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		// Intents of a deleted stream can only be cleared.
		s := &intents{js: js, bucket: opts.IntentBucket}
		list, bad, lerr := s.list(ctx, stream, consumers)
		if lerr != nil {
			return nil, lerr
		}
		r.SkippedRecords = bad
		if len(list) == 0 && len(bad) == 0 {
			return nil, jsutil.Wrap(err, "recover consumers on %q", stream)
		}
		for _, in := range list {
			rc := newRecoverChange(in)
			rc.State, rc.Action, rc.Reason = StateNoStream, ActClear, "the stream no longer exists"
			r.Changes = append(r.Changes, rc)
		}
		return r, nil
	}
	if err != nil {
		return nil, jsutil.Wrap(err, "recover consumers on %q", stream)
	}
	list, bad, err := p.intents.list(ctx, stream, consumers)
	if err != nil {
		return nil, err
	}
	r.SkippedRecords = bad
	x := &executor{planner: p}
	r.Changes = make([]*RecoverChange, len(list))
	err = p.each(ctx, len(list), func(i int) error {
		rc := newRecoverChange(list[i])
		r.Changes[i] = rc
		return x.classify(ctx, rc)
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

func newRecoverChange(in *Intent) *RecoverChange {
	return &RecoverChange{
		ChangeID: in.ID, Stream: in.Stream, Consumer: in.Consumer, Method: in.Method,
		Started: in.Time.UTC(), User: in.User, Host: in.Host, From: in.From, To: in.To,
		Warnings: []string{}, intent: in, Resume: in.Pause != nil && in.Pause.Resume,
	}
}

// StateRecreated is the state of a change whose stream was deleted and
// created again since the change started: the change no longer applies.
const StateRecreated = "stream-recreated"

// change is the Change that finishing rc makes.
func (rc *RecoverChange) change() *Change {
	in := rc.intent
	c := &Change{
		Stream: in.Stream, Consumer: in.Consumer, Method: in.Method, From: in.From, To: in.To,
		StartTime: in.StartTime, UndoOf: in.UndoOf, ChangeID: in.ID, Warnings: []string{}, state: rc.state,
		unsure: true, // an interrupted run: the server may have crashed too
		intent: in,
	}
	if in.Pause != nil {
		c.Pause = &PauseStep{Resume: in.Pause.Resume, Paused: true}
	}
	return c
}

// classify finds out what state the consumer is in and what finishing the
// change does.
func (x *executor) classify(ctx context.Context, rc *RecoverChange) error {
	if err := x.classifyState(ctx, rc); err != nil {
		return err
	}
	if cl := rc.intent.Claim; cl != nil {
		rc.Warnings = append(rc.Warnings, fmt.Sprintf("a recover run by %s took this change over at %s; if it is still running, let it finish", esc(cl.User+"@"+cl.Host), cl.Time.UTC().Format(time.RFC3339)))
	}
	if rc.Resume && rc.State != StateNoStream && !rc.foreign {
		rc.Reason += "; then resume it (the change paused it)"
	}
	x.noteApplied(rc)
	return nil
}

// noteApplied sets what finishing rc applies that the intent record says:
// the configuration it creates (ConfigDiff, with the called-out fields
// warned about) and the ack records it forgets. A record in the bucket
// proves nothing about who wrote it, so this is shown in full before
// --execute.
func (x *executor) noteApplied(rc *RecoverChange) {
	in := rc.intent
	switch rc.Action {
	case ActCreate, ActRecreate, ActReset, ActMove:
		rc.Forget = in.Forget
	}
	var from json.RawMessage
	what := ""
	switch rc.Action {
	case ActCreate:
		from, what = DefaultConfig, "recorded configuration against the server's defaults"
	case ActRecreate:
		from, what = rc.state.raw.json(), "recorded configuration against the consumer's now"
	default:
		return
	}
	cfg, _, err := in.creates()
	if err != nil {
		rc.Warnings = append(rc.Warnings, err.Error())
		return
	}
	diff, err := DiffConfig(from, cfg.json())
	if err != nil {
		rc.Warnings = append(rc.Warnings, fmt.Sprintf("could not compare the recorded configuration: %v", err))
		return
	}
	rc.ConfigDiff = diff
	rc.Warnings = append(rc.Warnings, CalledOut(what, diff)...)
}

func (x *executor) classifyState(ctx context.Context, rc *RecoverChange) error {
	in := rc.intent
	if why := x.streamRecreated(in.StreamCreated, "the change started"); why != "" {
		rc.State, rc.Action, rc.Reason = StateRecreated, ActClear, why+": the change no longer applies; its consumers are left as they are"
		rc.foreign = true
		return nil
	}
	if ok, err := recorded(ctx, x.js, x.opts.HistoryBucket, in.Stream, in.Consumer, in.ID); err != nil {
		return jsutil.Wrap(err, "recover consumer %q on %q: read its history", in.Consumer, in.Stream)
	} else if ok {
		rc.State, rc.Action, rc.Reason = StateRecorded, ActClear, "the change was made and recorded in history"
		return nil
	}
	st, err := loadConsumer(ctx, x.js, in.Stream, in.Consumer)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		rc.State, rc.Action = StateMissing, ActCreate
		rc.Reason = fmt.Sprintf("the consumer does not exist: create it with its recorded configuration, next delivery %d", in.To.Sequence)
		return nil
	}
	if err != nil {
		return jsutil.Wrap(err, "recover consumer %q on %q", in.Consumer, in.Stream)
	}
	rc.state = st
	if recoverIdentity(rc, st) {
		return nil
	}
	c := rc.change()
	oldCfg, _ := rawOf(in.Config)
	newCfg, move, _ := in.creates()
	cur := st.raw
	if in.Pause != nil {
		// The change paused it: its pause is not someone else's change.
		cur, oldCfg, newCfg = cur.withoutPause(), oldCfg.withoutPause(), newCfg.withoutPause()
	}
	atTarget := x.atTarget(ctx, c, st.info, in.To.Sequence)
	switch {
	case in.Method == Reset && len(oldCfg) > 0 && !sameExceptStart(cur, oldCfg):
		rc.State, rc.Action, rc.Reason = StateOther, ActLeave, editedReason(oldCfg, cur)
	case in.Method == Reset && atTarget:
		rc.State, rc.Action, rc.Reason = StateTarget, ActRecord, "reset in place and at the target: record it"
	case in.Method == Reset:
		rc.State, rc.Action = StateOld, ActReset
		rc.Reason = fmt.Sprintf("not at the target (delivered %d, ack floor %d): reset it in place, next delivery %d", st.info.Delivered.Stream, st.info.AckFloor.Stream, in.To.Sequence)
	case st.madeAt(in.Created) && len(oldCfg) > 0 && !sameExceptStart(cur, oldCfg):
		// The consumer the change found, edited since: the edit is not
		// the change's to undo.
		rc.State, rc.Action, rc.Reason = StateOther, ActLeave, editedReason(oldCfg, cur)
	case st.madeAt(in.Created):
		rc.State, rc.Action = StateOld, ActRecreate
		rc.Reason = fmt.Sprintf("not deleted yet: recreate it, next delivery %d", in.To.Sequence)
	case !sameExceptStart(cur, newCfg):
		rc.State, rc.Action, rc.Reason = StateOther, ActLeave, "recreated by someone else with another configuration since: left as it is"
	case atTarget:
		rc.State, rc.Action, rc.Reason = StateTarget, ActRecord, "recreated and at the target: record it"
	case sameStart(st.raw, newCfg) && move && st.info.Delivered.Consumer == 0:
		rc.State, rc.Action = StateNew, ActMove
		rc.Reason = fmt.Sprintf("recreated, not moved yet: move it in place, next delivery %d", in.To.Sequence)
	case sameStart(st.raw, newCfg):
		rc.State, rc.Action = StateNew, ActRecord
		rc.Reason = fmt.Sprintf("recreated at the target; a client has taken %d messages since: record it", st.info.Delivered.Consumer)
	default:
		rc.State, rc.Action = StateOld, ActRecreate
		rc.Reason = fmt.Sprintf("back at its old configuration: recreate it, next delivery %d", in.To.Sequence)
	}
	return nil
}

// ExecuteRecover finishes the changes of a recovery plan: each consumer is
// created, recreated or moved as its change intended, verified from the
// server's reply, recorded in history (once: a change already recorded is
// not recorded again) and its intent record removed. Each change is first
// claimed (a compare-and-set on its intent record): one whose record
// changed since the plan was made (finished or claimed by another run) is
// left alone.
func ExecuteRecover(ctx context.Context, js jetstream.JetStream, r *Recovery, opts Options) error {
	opts = opts.withDefaults()
	r.Executed = true
	if len(r.Changes) == 0 {
		return nil
	}
	var x *executor
	var s *intents
	if r.Changes[0].State == StateNoStream {
		s = &intents{js: js, bucket: opts.IntentBucket, settle: opts.Settle, timeout: opts.Timeout}
	} else {
		p, err := newPlanner(ctx, js, r.Stream, opts)
		if err != nil {
			return jsutil.Wrap(err, "recover consumers on %q", r.Stream)
		}
		x, s = &executor{planner: p}, p.intents
	}
	var first error
	failed := 0
	for _, rc := range r.Changes {
		if err := finish(ctx, x, s, rc, opts); err != nil {
			rc.Error = err.Error()
			if first == nil {
				first = err
			}
			failed++
		}
	}
	if failed > 1 {
		return fmt.Errorf("%w (and %d more changes failed)", first, failed-1)
	}
	return first
}

// finish takes one change's action.
func finish(ctx context.Context, x *executor, s *intents, rc *RecoverChange, opts Options) error {
	in := rc.intent
	kv, err := s.open(ctx, false)
	if err != nil {
		return jsutil.Wrap(err, "recover consumer %q on %q", in.Consumer, in.Stream)
	}
	cur, err := s.get(ctx, kv, HistoryKey(in.Stream, in.Consumer))
	if err != nil {
		return jsutil.Wrap(err, "recover consumer %q on %q", in.Consumer, in.Stream)
	}
	// Claimed before anything is done: of two runs that planned together,
	// the one that loses leaves the change to the other.
	claim := Claim{ID: newID(), Time: opts.Now().UTC(), User: opts.User, Host: opts.Host}
	ok := cur != nil && cur.ID == in.ID && cur.revision == in.revision
	if ok {
		if ok, err = s.claim(ctx, kv, in, claim); err != nil {
			return err
		}
	}
	if !ok {
		rc.Warnings = append(rc.Warnings, "its intent record changed since the plan was made (finished or taken over by another run): left alone")
		return nil
	}
	if rc.Action != ActClear && rc.Action != ActLeave && x != nil {
		if why := x.streamCheck(in.StreamCreated, "the change started"); why != nil {
			return jsutil.Errorf(jsutil.ErrConflict, "recover consumer %q on %q: %w; nothing changed: plan again", in.Consumer, in.Stream, why)
		}
	}
	if rc.Action == ActClear || rc.Action == ActLeave {
		if x != nil && !rc.foreign {
			// Resume a consumer the change paused before the record
			// that says so goes.
			c := rc.change()
			err := x.endPause(ctx, c, in, false)
			rc.Resumed = c.Pause != nil && c.Pause.Resumed
			rc.Warnings = append(rc.Warnings, c.Warnings...)
			if err != nil {
				return jsutil.Wrap(err, "recover consumer %q on %q: resume it", in.Consumer, in.Stream)
			}
			if rc.State == StateRecorded {
				// Made and recorded by the interrupted run, which
				// may not have lived to say so.
				c.Applied, c.Verified = true, true
				x.ended(ctx, c, in, OutcomeRecovered, nil)
			}
		}
		if err := s.complete(ctx, in); err != nil {
			return err
		}
		if x != nil {
			x.releaseHold(ctx, in)
		}
		rc.Done = true
		return nil
	}
	c := rc.change()
	if rc.Action != ActRecord {
		// The records a change forgets go before it moves the consumer.
		if err := x.forgetAcks(ctx, c, in.Forget); err != nil {
			return err
		}
	}
	var out outcome
	switch rc.Action {
	case ActRecord:
		c.proof, c.proofKind = rc.state, "consumer info"
		out = done
		if in.Method != Reset {
			// Made by the interrupted run: have the server write its
			// metadata once more (see confirmCreate).
			if cfg, cerr := rawOf(rc.state.raw.json()); cerr == nil {
				out, err = x.confirmCreate(ctx, c, cfg.withoutServerMetadata(), jsutil.RetryUntil(x.opts.Settle))
				c.proof = rc.state
			}
		}
	case ActCreate:
		out, err = x.createAt(ctx, c, in)
	case ActRecreate:
		out, err = x.applyRecreate(ctx, c, in, rc.state)
	case ActReset:
		// As the change would have: noted in the ack-record floor, reset
		// the same way (to the ack floor with the server's own reset),
		// and recreated instead where auto picked the method and the
		// reset cannot be made.
		if err := x.noteForward(ctx, c, in, rc.state); err != nil {
			return err
		}
		out, err = x.resetOrRecreate(ctx, c, in, rc.state)
		if c.Method != rc.Method {
			c.warn("%s: recreated it instead", c.Reason)
		}
		rc.Method = c.Method
	case ActMove:
		cfg, _, cerr := in.creates()
		if cerr != nil {
			return cerr
		}
		c.proof = rc.state
		out, err = x.moveCreated(ctx, c, cfg)
	}
	if out == done {
		c.Applied = true
		x.verify(ctx, c)
		rc.Recorded, err = x.recordAndComplete(ctx, c, in, true)
		rc.Done = rc.Recorded && err == nil
	}
	rc.Resumed = c.Pause != nil && c.Pause.Resumed
	// Anything short of done keeps the intent record: it is what a
	// later recover needs.
	rc.Applied, rc.Verified = c.Applied, c.Verified
	rc.Warnings = append(rc.Warnings, c.Warnings...)
	return err
}

// editedReason says that a consumer's configuration (cur) was changed
// since the change recorded it, naming the fields.
func editedReason(recorded, cur rawConfig) string {
	diff, _ := DiffConfig(recorded.json(), cur.json())
	var fields []string
	for _, f := range diff {
		if !isStartKey(f.Field) {
			fields = append(fields, f.Field)
		}
	}
	return fmt.Sprintf("its configuration was changed by someone else since the change started (%s): left as it is", strings.Join(fields, ", "))
}
