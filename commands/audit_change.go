package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/jsctl/jsctl/jsutil/audit"
	"github.com/jsctl/jsctl/jsutil/positions"
	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/nats-io/nats.go/jetstream"
)

// auditFlags are the global flags of the audit trail (docs/audit.md).
type auditFlags struct {
	Reason        string `name:"reason" env:"JSCTL_REASON" placeholder:"TEXT" help:"Why the change is made: stored in its audit event and in history (changing commands; at most 1000 bytes)." group:"audit"`
	RequireReason bool   `name:"require-reason" env:"JSCTL_REQUIRE_REASON" help:"Refuse a change without --reason (exit 2), for teams that want every change explained." group:"audit"`
	AuditMode     string `name:"audit" env:"JSCTL_AUDIT" default:"best-effort" enum:"best-effort,required,off" predictor:"enum" help:"Audit events in stream JSCTL_AUDIT: best-effort (change, and warn when the event cannot be written), required (first prove the event can be written, else refuse with exit 7) or off (${enum})." group:"audit"`
}

// maxReason bounds --reason.
const maxReason = 1000

func (f auditFlags) validate() error {
	if len(f.Reason) > maxReason {
		return jsutil.Errorf(jsutil.ErrBadInput, "--reason is %d bytes; at most %d", len(f.Reason), maxReason)
	}
	if !utf8.ValidString(f.Reason) {
		return jsutil.Errorf(jsutil.ErrBadInput, "--reason is not UTF-8 text")
	}
	return nil
}

// needReason refuses a change without --reason under --require-reason
// (exit 2). askApply calls it before it asks or applies, and
// beginChange again, so no changing command skips it.
func (e *Env) needReason(action string) error {
	if e.Globals.RequireReason && strings.TrimSpace(e.Globals.Reason) == "" {
		return jsutil.Errorf(jsutil.ErrBadInput, "%s: --require-reason (JSCTL_REQUIRE_REASON) is set: say why with --reason TEXT (or JSCTL_REASON); nothing changed", action)
	}
	return nil
}

// auditObject is a consumer a change is about.
type auditObject struct{ Stream, Consumer string }

// changeRun is one changing command's run as the audit trail sees it:
// made by beginChange before anything changes, told of each object's
// outcome with ended, and closed with close.
type changeRun struct {
	env    *Env
	action audit.Action
	js     jetstream.JetStream
	who    audit.Identity
	pub    *audit.Publisher
	off    bool

	mu      sync.Mutex
	before  map[auditObject]*audit.State
	streams map[string]*audit.Object
	// Events counts the events written; err is the first that was not,
	// and refused says the server refused one (the rest are not sent).
	events  int
	err     error
	refused bool
}

// beginChange is the one call every changing command makes once it knows
// the objects it is about to change (consumers; none when it learns them
// only as it goes) and before it changes any: it refuses without a reason
// under --require-reason (exit 2); under --audit required it proves that
// the events can be written to JSCTL_AUDIT on each object's subject and
// refuses (exit 7) when not; it reads each object's state before the
// change. cl is the connection the change is made on (a copy's target).
func (e *Env) beginChange(ctx context.Context, cl *jsutil.Client, action audit.Action, objects []auditObject) (*changeRun, error) {
	if err := e.needReason("jsctl " + strings.ReplaceAll(string(action), ".", " ")); err != nil {
		return nil, err
	}
	user, host := jsutil.Who("", "")
	r := &changeRun{
		env: e, action: action, js: cl.JS, who: audit.Identity{User: user, Host: host, NATS: cl.User},
		off: e.Globals.AuditMode == "off", before: map[auditObject]*audit.State{}, streams: map[string]*audit.Object{},
	}
	if r.off {
		return r, nil
	}
	r.pub = audit.NewPublisher(cl.JS, audit.Options{Timeout: e.Globals.Timeout, Replicas: e.auditReplicas(ctx, cl.JS, objects)})
	if e.Globals.AuditMode == "required" {
		subjects := []string{}
		for _, o := range objects {
			subjects = append(subjects, audit.Subject(action, o.Stream, o.Consumer))
		}
		if len(subjects) == 0 {
			subjects = append(subjects, audit.Subject(action, "-", "-"))
		}
		if err := r.pub.Check(ctx, jsutil.Unique(subjects)); err != nil {
			return nil, jsutil.Classify(jsutil.ErrAudit, fmt.Errorf("--audit required: the audit event cannot be written (%w); nothing changed", err))
		}
	}
	for _, o := range objects {
		r.before[o] = r.read(ctx, o)
	}
	return r, nil
}

// auditReplicas is the replica count of the stream of the first object
// (as the other jsctl buckets take their stream's), 1 when unknown.
func (e *Env) auditReplicas(ctx context.Context, js jetstream.JetStream, objects []auditObject) int {
	if len(objects) == 0 {
		return 1
	}
	rctx, cancel := context.WithTimeout(ctx, e.Globals.Timeout)
	defer cancel()
	s, err := js.Stream(rctx, objects[0].Stream)
	if err != nil {
		return 1
	}
	return max(s.CachedInfo().Config.Replicas, 1)
}

// read is an object's state now (nil when the consumer does not exist or
// cannot be read).
func (r *changeRun) read(ctx context.Context, o auditObject) *audit.State {
	if o.Consumer == "" || jsutil.NameProblem(o.Stream) != "" || jsutil.NameProblem(o.Consumer) != "" {
		return nil
	}
	c, err := positions.Read(context.WithoutCancel(ctx), r.js, o.Stream, o.Consumer, positionsOptions(r.env, ""))
	if err != nil {
		return nil
	}
	return audit.StateOf(c)
}

// streamObject is the stream with its creation time (looked up once).
func (r *changeRun) streamObject(ctx context.Context, name string) audit.Object {
	r.mu.Lock()
	defer r.mu.Unlock()
	if o, ok := r.streams[name]; ok {
		return *o
	}
	o := &audit.Object{Name: name}
	if jsutil.NameProblem(name) == "" {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.env.Globals.Timeout)
		if s, err := r.js.Stream(rctx, name); err == nil {
			o.Created = jsutil.TimePtr(s.CachedInfo().Created)
		}
		cancel()
	}
	r.streams[name] = o
	return *o
}

// auditEnd is one object's outcome.
type auditEnd struct {
	auditObject
	// ID is the change's id ("" = a new one).
	ID       string
	Outcome  audit.Outcome
	Method   string
	Target   string
	Recovers string
	Err      error
	Detail   map[string]any
	// Same says the change did not touch the consumer (a snapshot, ack
	// records): before is its state now.
	Same bool
}

// ended writes the event of one object's outcome: its state now is the
// event's after. An event that cannot be written is a warning (the change
// is made); under --audit required close returns it too.
func (r *changeRun) ended(ctx context.Context, end auditEnd) {
	if r == nil || r.off {
		return
	}
	after := r.read(ctx, end.auditObject)
	r.mu.Lock()
	before, ok := r.before[end.auditObject]
	r.mu.Unlock()
	if end.Same || !ok {
		before = after
	}
	if before != nil && after != nil && before != after {
		audit.Compare(before, after)
	}
	if end.ID == "" {
		end.ID = audit.NewID()
	}
	ev := &audit.Event{
		ID: end.ID, Time: r.env.Now().UTC(), Action: r.action,
		Stream:   r.streamObject(ctx, end.Stream),
		Consumer: audit.Object{Name: end.Consumer},
		Before:   before, After: after, Method: end.Method, Outcome: end.Outcome, Recovers: end.Recovers,
		Target: end.Target, Command: r.env.commandLine(), Identity: r.who, Reason: r.env.Globals.Reason,
		Detail: end.Detail, JsctlVersion: buildVersion().Version,
	}
	if end.Err != nil {
		ev.Error = end.Err.Error()
	}
	if after != nil {
		ev.Consumer.Created = r.created(ctx, end.auditObject)
	}
	r.mu.Lock()
	refused := r.refused
	r.mu.Unlock()
	var err error
	if refused {
		// A refusal does not change its mind within a run: the other
		// events are not sent, each after a wait of --timeout.
		err = errors.New("not sent: an earlier event of this run was refused")
	} else {
		err = r.pub.Publish(ctx, ev)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		if r.err == nil {
			r.err = err
		}
		r.refused = r.refused || errors.Is(err, jsutil.ErrPermission) || errors.Is(err, jsutil.ErrNotFound)
		fmt.Fprintf(r.env.Stderr, "jsctl: warning: the audit event of %s on consumer %s on %s was not written (the change was made): %s\n",
			r.action, Escape(end.Consumer), Escape(end.Stream), maskSecrets(err.Error(), r.env.Globals))
		return
	}
	r.events++
}

// created is when the server created the consumer now.
func (r *changeRun) created(ctx context.Context, o auditObject) *time.Time {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.env.Globals.Timeout)
	defer cancel()
	c, err := r.js.Consumer(rctx, o.Stream, o.Consumer)
	if err != nil {
		return nil
	}
	return jsutil.TimePtr(c.CachedInfo().Created)
}

// resetEnded is reset.Options.Ended for this run: each consumer change's
// event. A recovered change whose own run wrote its event before it was
// killed is not written twice.
func (r *changeRun) resetEnded() func(context.Context, reset.Ended) {
	if r == nil || r.off {
		return nil
	}
	return func(ctx context.Context, e reset.Ended) {
		c := e.Change
		if e.Outcome == reset.OutcomeRecovered && audit.Has(ctx, r.js, c.Stream, c.Consumer, e.Recovers) {
			return
		}
		r.ended(ctx, auditEnd{
			auditObject: auditObject{c.Stream, c.Consumer}, ID: e.ID, Outcome: audit.Outcome(e.Outcome),
			Method: string(c.Method), Target: e.Target, Recovers: e.Recovers, Err: e.Err,
		})
	}
}

// close ends the run: err (the command's own) first; else, under --audit
// required, an event that was not written (the change was made).
func (r *changeRun) close(err error) error {
	if err != nil || r == nil || r.env.Globals.AuditMode != "required" {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return jsutil.Classify(jsutil.ErrAudit, fmt.Errorf("--audit required: the change was made but its audit event was not written: %w", r.err))
	}
	return nil
}

// commandLine is the command line as typed, secrets removed: the values
// of --password and --token, and the user information of URLs.
func (e *Env) commandLine() []string {
	out := []string{"jsctl"}
	hide := false
	for _, a := range e.args {
		switch {
		case hide:
			a, hide = "***", false
		case a == "--password" || a == "--token":
			hide = true
		case strings.HasPrefix(a, "--password=") || strings.HasPrefix(a, "--token="):
			a = a[:strings.IndexByte(a, '=')+1] + "***"
		}
		out = append(out, maskSecrets(a, e.Globals))
	}
	return out
}

// scopeObject is the object of an ack-record scope's events: the stream
// and consumer of a STREAM.CONSUMER scope, else the scope's name as the
// stream and no consumer.
func scopeObject(scope string) auditObject {
	display := acks.ScopeDisplay(scope)
	parts := strings.Split(scope, ".")
	if len(parts) == 2 {
		s, serr := jsutil.KeyTokenDecode(parts[0])
		c, cerr := jsutil.KeyTokenDecode(parts[1])
		if serr == nil && cerr == nil {
			return auditObject{s, c}
		}
	}
	return auditObject{Stream: display}
}

// acksChange is beginChange for the ack-record commands: the objects are
// the scopes' consumers.
func (e *Env) acksChange(ctx context.Context, action audit.Action, scopes ...string) (*changeRun, error) {
	cl, err := e.Client(ctx)
	if err != nil {
		return nil, err
	}
	var objects []auditObject
	for _, sc := range scopes {
		objects = append(objects, scopeObject(sc))
	}
	return e.beginChange(ctx, cl, action, objects)
}

// acksEnd is the outcome of an ack-record change of scope: the consumer is
// not changed (before is after); detail says what was.
func acksEnd(bucket, scope string, err error, detail map[string]any) auditEnd {
	detail["bucket"], detail["scope"] = bucket, acks.ScopeDisplay(scope)
	end := auditEnd{auditObject: scopeObject(scope), Outcome: audit.Verified, Same: true, Detail: detail, Err: err}
	if err != nil {
		end.Outcome = audit.Failed
	}
	return end
}
