package jsutil

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Denied returns the permissions violation that nc's server reported for
// publishing to subject, or for subscribing to one of nc's reply inboxes,
// and nil when it reported none.
//
// A request that the server's permissions refuse gets no reply: the server
// drops it and sends -ERR 'Permissions Violation for Publish to "<subject>"'
// instead, which nats.go records (synchronously, in its read loop) as the
// connection's last error. By the time the request times out, that error
// is there. Only a violation naming subject (or the reply inbox) counts, so
// an earlier denial of some other request is not taken for this one.
func Denied(nc *nats.Conn, subject string) error {
	if nc == nil {
		return nil
	}
	last := nc.LastError()
	if last == nil || !errors.Is(last, nats.ErrPermissionViolation) {
		return nil
	}
	text := last.Error()
	if subject != "" && strings.Contains(text, `for Publish to "`+subject+`"`) {
		return last
	}
	inbox := nc.Opts.InboxPrefix
	if inbox == "" {
		inbox = strings.TrimSuffix(nats.InboxPrefix, ".")
	}
	if strings.Contains(text, `for Subscription to "`+inbox+`.`) {
		return last
	}
	return nil
}

// DeniedSince returns the permissions violation the server last reported
// on nc and the subject whose publish it refused ("" for a refused
// subscription), when it was reported after prior (the connection's last
// error when the caller started); a nil error when there is none. A
// refused publish is reported asynchronously and never answered, so work
// that waits on one learns of the refusal only here.
func DeniedSince(nc *nats.Conn, prior error) (string, error) {
	last := nc.LastError()
	if last == nil || last == prior || !errors.Is(last, nats.ErrPermissionViolation) {
		return "", nil
	}
	return DeniedSubject(last), last
}

// RequestError classes the error of a request to subject sent on nc. When
// the server denied the request (see Denied) it returns an ErrPermission
// error reading `permission denied (publish to "<subject>")` (or
// `subscribe to` for a denied reply inbox); a 403 API error is classed
// ErrPermission too. Other errors, and nil, are returned unchanged, so a
// timeout stays a timeout: a lost reply, not a refusal.
func RequestError(nc *nats.Conn, subject string, err error) error {
	if err == nil || errors.Is(err, ErrPermission) {
		return err
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.Code == 403 {
		return Classify(ErrPermission, err)
	}
	if !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	v := Denied(nc, subject)
	if v == nil {
		return err
	}
	what := "publish to " + `"` + subject + `"`
	if i := strings.Index(v.Error(), "for Subscription to "); i >= 0 {
		what = "subscribe to " + strings.TrimPrefix(v.Error()[i:], "for Subscription to ")
	}
	return Classify(ErrPermission, &deniedErr{msg: "permission denied (" + what + ")", err: v})
}

type deniedErr struct {
	msg string
	err error
}

func (e *deniedErr) Error() string { return e.msg }
func (e *deniedErr) Unwrap() error { return e.err }

// Refusals is one run's record of what the server's permissions refused
// on its connections: every violation the server reported, in order. A
// refused request is never answered, and nats.go keeps only the
// connection's last error, so without this record a request learns of its
// refusal only when it times out, and only if no other refusal came
// after it. With it (WithRefusals, and a connection made by Connect with
// that context, whose error handler reports here):
//
//   - a request of the request layer waiting for its answer ends as soon
//     as the server reports its subject refused, with an ErrPermission
//     error naming that subject (no --timeout wait);
//   - a refusal that a caller dealt with (a direct get refused and the
//     message read by a message get instead) is marked handled, so a later
//     error is never blamed on it (Client.Explain names only refusals
//     nobody handled);
//   - what the library does differently because of a refusal is said
//     once per run (NoteOnce), through the callback given to WithRefusals.
//
// It is safe for concurrent use.
type Refusals struct {
	mu      sync.Mutex
	list    []*refusal
	waiters map[int]refusalWaiter
	next    int
	warn    func(string)
	said    map[string]bool
	// direct lists the streams whose direct gets were refused in this run
	// (see StreamMsgs).
	direct map[string]bool
}

// refusal is one violation the server reported.
type refusal struct {
	subject string // the publish refused; "" for a refused subscription
	err     error
	handled bool
}

type refusalWaiter struct {
	match  func(subject string) bool
	cancel context.CancelCauseFunc
}

type refusalsKey struct{}

// WithRefusals returns ctx carrying a new record of refusals for one run
// (see Refusals); warn, when set, is told once each what the library did
// differently because of a refusal (from any goroutine).
func WithRefusals(ctx context.Context, warn func(msg string)) context.Context {
	return context.WithValue(ctx, refusalsKey{}, &Refusals{warn: warn})
}

// RefusalsOf returns the record ctx carries (see WithRefusals), or nil.
func RefusalsOf(ctx context.Context) *Refusals {
	r, _ := ctx.Value(refusalsKey{}).(*Refusals)
	return r
}

// Note records err when it is a permissions violation the server reported
// (a connection's error handler calls it, with the connection's reply
// inbox prefix, "_INBOX." by default), and ends at once the requests
// waiting for an answer that it refuses: those to the refused publish
// subject or, for a refused subscription to a reply inbox, all of them
// (no answer can come). A refused subscription to another subject ends
// none.
func (r *Refusals) Note(err error, inbox string) {
	if r == nil || err == nil || !errors.Is(err, nats.ErrPermissionViolation) {
		return
	}
	subject := DeniedSubject(err)
	replies := subject == "" && inbox != "" && strings.Contains(err.Error(), `for Subscription to "`+inbox)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, &refusal{subject: subject, err: err})
	for id, w := range r.waiters {
		if replies || subject != "" && w.match(subject) {
			w.cancel(refusalError(subject, err))
			delete(r.waiters, id)
		}
	}
}

// refusalError is the error of a request the server refused: subject's
// publish, or ("" subject) the subscription to the reply inboxes.
func refusalError(subject string, violation error) error {
	if subject != "" {
		return &deniedErr{msg: DeniedError(subject).Error(), err: Classify(ErrPermission, violation)}
	}
	return Classify(ErrPermission, &deniedErr{msg: "permission denied (" + violation.Error() + ")", err: violation})
}

// watch returns ctx ended, with the refusal as its cause, when the server
// reports subject refused after this call; stop releases it.
func (r *Refusals) watch(ctx context.Context, subject string) (context.Context, func()) {
	return r.watchMatch(ctx, func(s string) bool { return s == subject })
}

// watchMatch is watch for every refused subject that match accepts.
func (r *Refusals) watchMatch(ctx context.Context, match func(subject string) bool) (context.Context, func()) {
	if r == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	r.mu.Lock()
	if r.waiters == nil {
		r.waiters = map[int]refusalWaiter{}
	}
	id := r.next
	r.next++
	r.waiters[id] = refusalWaiter{match: match, cancel: cancel}
	r.mu.Unlock()
	return ctx, func() {
		r.mu.Lock()
		delete(r.waiters, id)
		r.mu.Unlock()
		cancel(nil)
	}
}

// EndOnRefusal returns ctx ended as soon as the server reports a publish
// to subject refused (when ctx carries the run's Refusals, see
// WithRefusals; else ctx itself), for a request sent by other means than
// the request layer (nats.go's jetstream calls), which would otherwise
// wait out its timeout. RefusedCause then turns its error into the
// refusal. Call stop once the request is done.
func EndOnRefusal(ctx context.Context, subject string) (_ context.Context, stop func()) {
	return RefusalsOf(ctx).watch(ctx, subject)
}

// EndOnRefusalPrefix is EndOnRefusal for every subject that is prefix or
// starts with prefix and a dot: the creation of a consumer, whose subject
// nats.go ends with the consumer's filter.
func EndOnRefusalPrefix(ctx context.Context, prefix string) (_ context.Context, stop func()) {
	return RefusalsOf(ctx).watchMatch(ctx, func(s string) bool { return s == prefix || strings.HasPrefix(s, prefix+".") })
}

// RefusedCause is err, or the refusal that ended ctx (see EndOnRefusal)
// when that is why the request failed: an ErrPermission error naming the
// refused subject.
func RefusedCause(ctx context.Context, err error) error { return refusedCause(ctx, err) }

// Refused returns the error of the last refusal of subject's publish this
// run recorded (ErrPermission, naming subject), and nil when there is
// none.
func (r *Refusals) Refused(subject string) error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.list) - 1; i >= 0; i-- {
		if f := r.list[i]; f.subject == subject {
			return refusalError(subject, f.err)
		}
	}
	return nil
}

// Handled marks the refusals of subject as dealt with: the error of a
// request that named it, or a read done another way instead. Client.Explain
// does not blame another error on them.
func (r *Refusals) Handled(subject string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.list {
		if f.subject == subject {
			f.handled = true
		}
	}
}

// Unhandled returns the violations nobody dealt with (see Handled), in
// the order the server reported them, one per subject.
func (r *Refusals) Unhandled() []error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []error
	seen := map[string]bool{}
	for _, f := range r.list {
		if !f.handled && !seen[f.subject] {
			seen[f.subject] = true
			out = append(out, f.err)
		}
	}
	return out
}

// NoteOnce tells the run's callback msg, once per key.
func (r *Refusals) NoteOnce(key, msg string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.said == nil {
		r.said = map[string]bool{}
	}
	first := !r.said[key]
	r.said[key] = true
	warn := r.warn
	r.mu.Unlock()
	if first && warn != nil {
		warn(msg)
	}
}
