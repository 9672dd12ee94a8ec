package jsutil

import (
	"context"
	"errors"
	"strings"

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
