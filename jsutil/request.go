package jsutil

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The request layer: every JetStream API request jsctl writes by hand
// (rather than through nats.go's jetstream package) goes through Request
// or RequestMsg, which add the API prefix of the connection's domain, bound
// each attempt, decode the API error and apply the retry rule below. Feature
// packages say what to ask; this file says how it is sent again.
//
// The retry rule (docs/connecting.md, "When the server does not answer"):
//
//   - Sent again: a request that got no answer that decides anything
//     (Retryable): no responders, no reply in time, the connection being
//     re-established, and the transient server errors (503 "JetStream
//     temporarily unavailable", 10005 "no suitable peers for placement").
//     A request marked Once (it changes something) is sent again only
//     after a transient server error, which says it was not applied; after
//     a lost reply its caller looks at what the server holds instead.
//   - For how long: until the retry budget that ctx carries (WithRetry; the
//     CLI's --retry-for, default DefaultSettle) has passed since the first
//     unanswered attempt, or ctx ends. Each attempt waits at most
//     RequestOptions.Timeout; the pause between attempts grows from 100ms
//     to 1s.
//   - Final: every answer that decides (not found, bad request, conflict,
//     ...), a refusal by the server's permissions (ErrPermission), JetStream
//     not enabled (10076, or 10039 for the account: the server answered and
//     will not change its mind), a closed connection, ctx's end.

// RequestOptions tune Request and RequestMsg.
type RequestOptions struct {
	// Timeout bounds each attempt (zero: the jetstream handle's
	// DefaultTimeout); ctx's deadline bounds them all.
	Timeout time.Duration
	// Once marks a request that changes something (create, delete, reset):
	// it is sent again only after a transient server error, never after a
	// lost reply.
	Once bool
}

// apiReply is the part of every JetStream API reply that says whether it
// failed: the one declaration of the API error's JSON in jsctl.
type apiReply struct {
	Error *jetstream.APIError `json:"error,omitempty"`
}

// Request sends the JetStream API request api (e.g. "STREAM.INFO.ORDERS";
// the API prefix of js's domain or custom prefix is added) with body on
// js's connection, applying the retry rule above, and returns the reply's
// payload. An error reply is returned as an error: stream and consumer not
// found as nats.go's sentinels (jetstream.ErrStreamNotFound,
// jetstream.ErrConsumerNotFound), others as a *jetstream.APIError; a
// request the server's permissions refused is classed ErrPermission (see
// RequestError). Errors are not wrapped: callers name the object (Wrap).
func Request(ctx context.Context, js jetstream.JetStream, api string, body []byte, o RequestOptions) ([]byte, error) {
	msg, err := send(ctx, js, api, body, o, APIError)
	if err != nil {
		return nil, err
	}
	return msg.Data, nil
}

// RequestMsg is Request for an API whose replies are not JSON (a direct
// get answers with the message and status headers): it returns the reply
// message as it came.
func RequestMsg(ctx context.Context, js jetstream.JetStream, api string, body []byte, o RequestOptions) (*nats.Msg, error) {
	return send(ctx, js, api, body, o, nil)
}

// APIError returns the error a JetStream API reply carries (see Request),
// nil when it carries none, or an error saying the reply is unreadable.
func APIError(data []byte) error {
	var r apiReply
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("unreadable reply: %w", err)
	}
	if r.Error == nil {
		return nil
	}
	switch r.Error.ErrorCode {
	case jetstream.JSErrCodeConsumerNotFound:
		return jetstream.ErrConsumerNotFound
	case jetstream.JSErrCodeStreamNotFound:
		return jetstream.ErrStreamNotFound
	}
	return r.Error
}

// send is Request with decode reading the reply's error (nil: none).
func send(ctx context.Context, js jetstream.JetStream, api string, body []byte, o RequestOptions, decode func([]byte) error) (*nats.Msg, error) {
	var msg *nats.Msg
	err := retry(ctx, js, api, o, func(ctx context.Context, nc *nats.Conn, subject string, timeout time.Duration) error {
		var err error
		msg, err = requestOnce(ctx, nc, subject, body, timeout)
		if err == nil && decode != nil {
			err = decode(msg.Data)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return msg, nil
}

// retry makes the attempts of one request to api (the prefix of js's
// domain added) under the retry rule above: attempt sends it once, waiting
// at most timeout for its answer.
func retry(ctx context.Context, js jetstream.JetStream, api string, o RequestOptions, attempt func(ctx context.Context, nc *nats.Conn, subject string, timeout time.Duration) error) error {
	nc := js.Conn()
	if nc == nil {
		return Errorf(ErrBadInput, "no connection for a jetstream request")
	}
	subject := APIPrefix(js.Options()) + api
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = js.Options().DefaultTimeout
	}
	refusals := RefusalsOf(ctx)
	var until time.Time // set at the first attempt left unanswered
	for n := 0; ; n++ {
		prior := nc.LastError()
		actx, stop := refusals.watch(ctx, subject)
		err := attempt(actx, nc, subject, timeout)
		stop()
		if err == nil {
			return nil
		}
		err = RequestError(nc, subject, err)
		if !errors.Is(err, ErrPermission) && unansweredReply(err) {
			if refused := refusals.Refused(subject); refused != nil {
				err = refused
			} else if denied, v := DeniedSince(nc, prior); refusals == nil && v != nil && denied != "" {
				// Without a record of the run's refusals only the
				// connection's last one is known: another request's,
				// which may have hidden a refusal of this one. Asking
				// again would only wait out the timeout once more.
				return fmt.Errorf("%w; meanwhile the server refused a publish to %q and reports only its last refusal, so this request may have been refused as well", err, denied)
			}
		}
		if errors.Is(err, ErrPermission) {
			refusals.Handled(subject)
		}
		if !mayRepeat(err, o.Once) || ctx.Err() != nil {
			return err
		}
		if until.IsZero() {
			until = time.Now().Add(RetryFor(ctx))
		}
		if !time.Now().Before(until) || !AskAgain(ctx, until, err) || !Sleep(ctx, Backoff(n)) {
			return err
		}
	}
}

// requestOnce sends one request, waiting at most timeout for its reply.
func requestOnce(ctx context.Context, nc *nats.Conn, subject string, body []byte, timeout time.Duration) (*nats.Msg, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	m, err := nc.RequestWithContext(ctx, subject, body)
	return m, refusedCause(ctx, err)
}

// refusedCause is err, or the refusal that ended ctx (see Refusals.watch)
// when that is why the request failed.
func refusedCause(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cause := context.Cause(ctx); errors.Is(cause, ErrPermission) {
		return cause
	}
	return err
}

// mayRepeat applies the retry rule to one attempt's error: every Retryable
// error for a request that may be repeated, only a transient server error
// (not applied) for one marked once.
func mayRepeat(err error, once bool) bool {
	if once {
		return transient(err)
	}
	return Retryable(err)
}

// Retryable says whether a request that failed with err got no answer that
// decides anything, so that sending it again may succeed: no responders, no
// reply in time, the connection being re-established, or a transient
// server error (see transient). It is the one retry rule of jsctl (see the
// top of this file); a refusal (ErrPermission) and JetStream not being
// enabled are final.
func Retryable(err error) bool {
	if err == nil || errors.Is(err, ErrPermission) || errors.Is(err, context.Canceled) {
		return false
	}
	return unansweredReply(err) || transient(err)
}

// unansweredReply says whether err is a request nobody answered.
func unansweredReply(err error) bool {
	return errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrDisconnected) || errors.Is(err, nats.ErrConnectionReconnecting)
}

// noPeers is the server's "no suitable peers for placement" (for example
// "peer offline"): in a cluster that already holds replicated assets, a
// node restarting or one whose state has not reached the meta leader yet.
const noPeers = 10005

// transient says whether err is a server's answer that the request was not
// applied for now: 503 (JetStream temporarily unavailable, a leader being
// elected) other than JetStream not being enabled, or 10005 (no peer to
// place a replica on for now).
func transient(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode {
	case jetstream.JSErrCodeJetStreamNotEnabled, jetstream.JSErrCodeJetStreamNotEnabledForAccount:
		return false
	case noPeers:
		return true
	}
	return apiErr.Code == 503
}

// Backoff is the pause before attempt+1 of a request sent again: 100ms,
// doubling, at most 1s.
func Backoff(attempt int) time.Duration {
	return min(100*time.Millisecond<<min(attempt, 4), time.Second)
}

// Sleep waits d, or until ctx ends; it says whether d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// DirectPending asks a direct get (batch of one) on stream from seq for the
// number of messages matching filter ("" for all) at or after seq: the
// server's pending count, computed from its per-subject index. It needs
// the stream's allow_direct.
func DirectPending(ctx context.Context, js jetstream.JetStream, stream string, seq uint64, filter string, o RequestOptions) (uint64, error) {
	if filter == "" {
		filter = ">"
	}
	body := fmt.Appendf(nil, `{"seq":%d,"next_by_subj":%s,"batch":1}`, seq, strconv.Quote(filter))
	msg, err := RequestMsg(ctx, js, "DIRECT.GET."+stream, body, o)
	if err != nil {
		return 0, err
	}
	if status := msg.Header.Get("Status"); status != "" {
		if status == "404" {
			return 0, nil
		}
		return 0, fmt.Errorf("status %s %s", status, msg.Header.Get("Description"))
	}
	n, err := strconv.ParseUint(msg.Header.Get("Nats-Num-Pending"), 10, 64)
	if err != nil {
		return 0, errors.New("the reply has no pending count")
	}
	return n + 1, nil // the message sent is not counted as pending
}
