package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Options say how the audit stream is created and written.
type Options struct {
	// Replicas and Storage are the stream's when jsctl creates it (0 and
	// "": 1 and file).
	Replicas int
	Storage  jetstream.StorageType
	// MaxAge is how long it keeps events (0: DefaultMaxAge).
	MaxAge time.Duration
	// Timeout bounds each request (0: the jetstream handle's default).
	Timeout time.Duration
	// Settle is how long a publish whose reply is lost is sent again
	// (with the same Nats-Msg-Id, so it is stored once); 0: 5s.
	Settle time.Duration
}

func (o Options) withDefaults(js jetstream.JetStream) Options {
	if o.MaxAge <= 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	if o.Timeout <= 0 {
		o.Timeout = js.Options().DefaultTimeout
	}
	if o.Settle <= 0 {
		o.Settle = 5 * time.Second
	}
	return o
}

// Publisher writes events to the audit stream over one connection. It is
// safe for concurrent use.
type Publisher struct {
	js   jetstream.JetStream
	opts Options

	mu      sync.Mutex // held while the stream is looked up or created
	ensured bool
}

// NewPublisher returns a publisher over js.
func NewPublisher(js jetstream.JetStream, opts Options) *Publisher {
	return &Publisher{js: js, opts: opts.withDefaults(js)}
}

// Ensure makes sure the audit stream exists, creating it (subjects
// jsctl.audit.>, MaxAge, Replicas, Storage) when it does not. Errors are
// classed: a refused request ErrPermission, an unreachable server
// ErrConnection.
func (p *Publisher) Ensure(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ensured {
		return nil
	}
	err := jsutil.WhileUnanswered(ctx, p.opts.Settle, func() error {
		rctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
		defer cancel()
		_, err := p.js.Stream(rctx, Stream)
		return jsutil.RequestError(p.js.Conn(), jsutil.APIPrefix(p.js.Options())+"STREAM.INFO."+Stream, err)
	})
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		err = jsutil.WhileUnanswered(ctx, p.opts.Settle, func() error {
			rctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
			defer cancel()
			_, err := p.js.CreateStream(rctx, jetstream.StreamConfig{
				Name: Stream, Description: "jsctl audit trail (docs/audit.md)", Subjects: []string{SubjectPrefix + ".>"},
				MaxAge: p.opts.MaxAge, Replicas: p.opts.Replicas, Storage: p.opts.Storage, Duplicates: 2 * time.Minute,
			})
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				return nil // made meanwhile by another run
			}
			return jsutil.RequestError(p.js.Conn(), jsutil.APIPrefix(p.js.Options())+"STREAM.CREATE."+Stream, err)
		})
		if err != nil {
			return jsutil.Wrap(err, "create audit stream %q", Stream)
		}
	} else if err != nil {
		return jsutil.Wrap(err, "open audit stream %q", Stream)
	}
	p.ensured = true
	return nil
}

// errProbe is the answer the probe is built to get: the stream read it,
// compared the expected stream name and stored nothing.
const errCodeStreamMismatch = 10060

// Check proves, without storing anything, that an event can be published
// on each subject: the stream exists (or is created), and a probe sent on
// the subject with a Nats-Expected-Stream header no stream matches is
// answered by the audit stream's "expected stream does not match" (so the
// publish is allowed and the stream listens on the subject). A refused
// publish is ErrPermission, a subject no stream takes ErrNotFound.
func (p *Publisher) Check(ctx context.Context, subjects []string) error {
	if err := p.Ensure(ctx); err != nil {
		return err
	}
	for _, subj := range subjects {
		m := nats.NewMsg(subj)
		m.Header.Set(jetstream.ExpectedStreamHeader, Stream+"-probe-never-matches")
		err := jsutil.WhileUnanswered(ctx, p.opts.Settle, func() error {
			rctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
			defer cancel()
			reply, err := p.js.Conn().RequestMsgWithContext(rctx, m)
			if err != nil {
				return jsutil.RequestError(p.js.Conn(), subj, err)
			}
			var ack struct {
				Error *jetstream.APIError `json:"error"`
			}
			if json.Unmarshal(reply.Data, &ack) != nil || ack.Error == nil {
				return fmt.Errorf("publish to %q: the probe was stored or answered by something other than a stream", subj)
			}
			if ack.Error.ErrorCode == errCodeStreamMismatch {
				return nil
			}
			return jsutil.RequestError(p.js.Conn(), subj, ack.Error)
		})
		if errors.Is(err, nats.ErrNoResponders) {
			return jsutil.Errorf(jsutil.ErrNotFound, "publish to %q: no stream takes the subject (is %q's subject jsctl.audit.>?)", subj, Stream)
		}
		if err != nil {
			return jsutil.Wrap(err, "publish audit events on %q", subj)
		}
	}
	return nil
}

// Publish appends e to the audit stream on Subject(e.Action, stream,
// consumer) with Nats-Msg-Id e.ID: a publish whose reply is lost is sent
// again (within Settle) and the stream stores it once.
func (p *Publisher) Publish(ctx context.Context, e *Event) error {
	ctx = context.WithoutCancel(ctx) // the change is made: say so even after Ctrl-C
	if err := p.Ensure(ctx); err != nil {
		return err
	}
	e.V = Version
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	subj := Subject(e.Action, e.Stream.Name, e.Consumer.Name)
	rt := jsutil.RetryEvery(p.opts.Settle, 200*time.Millisecond)
	for {
		m := nats.NewMsg(subj)
		m.Data = data
		m.Header.Set(jetstream.MsgIDHeader, e.ID)
		m.Header.Set(jetstream.ExpectedStreamHeader, Stream)
		pctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
		_, err = p.js.PublishMsg(pctx, m)
		cancel()
		if err == nil {
			return nil
		}
		err = jsutil.RequestError(p.js.Conn(), subj, err)
		if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) {
			return jsutil.Errorf(jsutil.ErrNotFound, "publish audit event on %q: no stream takes the subject", subj)
		}
		if !jsutil.Retryable(err) || !rt.Again(ctx, err) {
			return jsutil.Wrap(err, "publish audit event on %q", subj)
		}
	}
}

// Has reports whether the last event of stream and consumer (any action)
// is the final event of change id (any outcome but left): a recover run
// asks it before writing the event of a change whose own run wrote it
// already and was killed before the end.
func Has(ctx context.Context, js jetstream.JetStream, stream, consumer, id string) bool {
	s, err := js.Stream(ctx, Stream)
	if err != nil {
		return false
	}
	for _, subj := range []string{
		SubjectPrefix + ".*." + jsutil.KeyToken(stream) + "." + jsutil.KeyToken(consumer),
		SubjectPrefix + ".*.*." + jsutil.KeyToken(stream) + "." + jsutil.KeyToken(consumer),
	} {
		m, err := s.GetLastMsgForSubject(ctx, subj)
		if err != nil || m.Header.Get(jetstream.MsgIDHeader) != id {
			continue
		}
		if e, err := Decode(m.Data); err == nil && e.ID == id && e.Outcome != Left {
			return true
		}
	}
	return false
}
