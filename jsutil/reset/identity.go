package reset

import (
	"context"
	"fmt"
	"time"

	"github.com/jsctl/jsctl/jsutil"
)

// Identities. A name outlives what it names: a stream or consumer deleted
// and created again under the same name is another object, and a change
// planned (or started, or saved) for the first must not be made to the
// second. The server's creation time tells them apart: nats-server's own
// stream identity (the Nats-Stream-Identity header of 2.14+, sent only in
// replies to sourcing consumer creates and resets) is a hash of the
// stream's creation time, so the creation time is the identity, and every
// server has it in its stream and consumer info.
//
// Every comparison goes through jsutil's identity layer (jsutil.Identity:
// Check for "is it still the object recorded?", with its one error, and
// Is for "is it the object made then?").
//
// Plans, intents and history records hold the stream's creation time
// (StreamCreated) and the consumer's (Change.Created, Intent.Created). An
// intent also holds the creation time of the consumer its change created
// (NewCreated), written right after the create; Creating is set just
// before a create is sent, so recover can tell jsctl's own new consumer
// from one someone else made.

// timeText is a creation time for messages.
func timeText(t *time.Time) string { return jsutil.CreatedText(t) }

// streamCreated is the creation time of the planner's stream.
func (p *planner) streamCreated() *time.Time { return jsutil.TimePtr(p.info.Created) }

// streamNow is the identity of the planner's stream as it is now.
func (p *planner) streamNow() jsutil.Identity { return jsutil.StreamIdentity(p.info) }

// streamCheck compares the stream's creation time recorded when since
// happened with the stream now (jsutil.Identity.Check): a *jsutil.Recreated
// error when its name now names another stream, nil when it is the same or
// the record holds no creation time.
func (p *planner) streamCheck(recorded *time.Time, since string) error {
	return jsutil.RecordedStream(p.info.Config.Name, recorded).Check(p.streamNow(), since)
}

// streamRecreated is streamCheck's refusal as text ("" when none).
func (p *planner) streamRecreated(recorded *time.Time, since string) string {
	return errText(p.streamCheck(recorded, since))
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// checkPlanStream refuses to execute a plan made for a stream that has
// been recreated since (jsutil.ErrConflict, nothing changed) and warns
// where the plan (by an older jsctl) does not say which stream it was.
func (p *planner) checkPlanStream(plan *Plan) error {
	if plan.StreamCreated == nil {
		for _, c := range plan.Changes {
			c.warn("the plan does not record when stream %q was created (made by an older jsctl): not checked that it is still the stream planned for", plan.Stream)
		}
		return nil
	}
	if err := p.streamCheck(plan.StreamCreated, "the plan was made"); err != nil {
		return jsutil.Errorf(jsutil.ErrConflict, "reset consumers on %q: %w; nothing changed: plan again", plan.Stream, err)
	}
	return nil
}

// consumerCheck returns the refusal (a *jsutil.Recreated) of a change
// whose consumer was created at another time than the plan saw (nil when
// the same or unknown).
func consumerCheck(c *Change, st *consumerState) error {
	return jsutil.RecordedConsumer(c.Stream, c.Consumer, c.Created).Check(st.identity(), "the plan was made")
}

// noteCreating records in the change's intent, before a create is sent,
// that the consumer about to exist is the change's own.
func (x *executor) noteCreating(ctx context.Context, c *Change) error {
	in := c.intent
	if in == nil || in.Creating {
		return nil
	}
	in.Creating = true
	if err := x.intents.update(ctx, in); err != nil {
		in.Creating = false
		return jsutil.Wrap(err, "create consumer %q on %q: note the create in the intent record (nothing created)", c.Consumer, c.Stream)
	}
	return nil
}

// noteCreated records in the change's intent the creation time of the
// consumer the change just created (c.proof).
func (x *executor) noteCreated(ctx context.Context, c *Change) {
	in := c.intent
	if in == nil || c.proof == nil {
		return
	}
	in.NewCreated, in.Creating = c.proof.createdAt(), false
	if err := x.intents.update(ctx, in); err != nil {
		c.warn("the intent record does not say when the new consumer was created (%v); recover then tells it from someone else's by its configuration", err)
	}
}

// recoverIdentity classifies an unfinished change whose consumer (st) is
// not the one the change found nor one it created: someone else made it,
// and it is left alone. It returns false where the change may go on (the
// consumer is the change's own, or that cannot be known).
func recoverIdentity(rc *RecoverChange, st *consumerState) bool {
	in := rc.intent
	if in.StreamCreated == nil {
		rc.Warnings = append(rc.Warnings, "the intent record does not hold creation times (written by an older jsctl): the consumer is taken to be the one the change found or made")
		return false
	}
	if st.madeAt(in.Created) || st.madeAt(in.NewCreated) {
		return false
	}
	if in.Creating {
		rc.Warnings = append(rc.Warnings, fmt.Sprintf("the change was creating the consumer when it stopped, and no record says when it did: consumer created %s is taken to be the change's own by its configuration", timeText(st.createdAt())))
		return false
	}
	made := ""
	if in.NewCreated != nil {
		made = ", and created one at " + timeText(in.NewCreated)
	}
	rc.State, rc.Action, rc.foreign = StateOther, ActLeave, true
	rc.Reason = fmt.Sprintf("deleted and created again by someone else since the change started (created %s; the change found it created %s%s): left as it is",
		timeText(st.createdAt()), timeText(in.Created), made)
	return true
}

// newCreated is when the consumer after the change was created, for its
// history record: from the server's reply, else the intent.
func newCreated(c *Change, in *Intent) *time.Time {
	if c.proof != nil {
		return c.proof.createdAt()
	}
	return in.NewCreated
}
