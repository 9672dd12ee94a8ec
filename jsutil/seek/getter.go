package seek

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// getRequest is the part of the server's JSApiMsgGetRequest that seek uses
// (nats-server server/jetstream_api.go). On $JS.API.STREAM.MSG.GET:
//   - seq alone loads exactly that sequence (not found when deleted);
//   - seq with next_by_subj loads the first message at or after seq whose
//     subject matches (">" for any), stepping over deleted sequences;
//   - start_time replaces seq with the store's GetSeqFromTime(start_time),
//     the first sequence whose time is ≥ start_time (LastSeq+1 when none),
//     and is answered together with next_by_subj the same way.
//
// A server that predates start_time either ignores the field (and answers
// as if seq were 0, i.e. from the first message) or, in strict mode, rejects
// the unknown field with a 400 error.
type getRequest struct {
	Seq       uint64     `json:"seq,omitempty"`
	NextFor   string     `json:"next_by_subj,omitempty"`
	StartTime *time.Time `json:"start_time,omitempty"`
}

// streamState is the part of a stream's state that seek uses.
type streamState struct {
	Msgs        uint64    `json:"messages"`
	FirstSeq    uint64    `json:"first_seq"`
	LastSeq     uint64    `json:"last_seq"`
	FirstTime   time.Time `json:"first_ts"`
	LastTime    time.Time `json:"last_ts"`
	NumDeleted  int       `json:"num_deleted"`
	AllowDirect bool      `json:"-"`
}

// getter talks to one stream.
type getter interface {
	stream() string
	// get answers a message-get request: the message, or nil when the
	// server found none.
	get(ctx context.Context, req getRequest) (*Message, error)
	// info returns the stream's state.
	info(ctx context.Context) (streamState, error)
}

// apiGetter sends raw JetStream API requests over the connection of a
// jetstream.JetStream, honouring its domain or API prefix.
type apiGetter struct {
	nc      *nats.Conn
	prefix  string // e.g. "$JS.API."
	name    string
	timeout time.Duration
}

func newAPIGetter(js jetstream.JetStream, stream string) (*apiGetter, error) {
	if js == nil || js.Conn() == nil {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "seek stream %q: no jetstream connection", stream)
	}
	if err := checkStreamName(stream); err != nil {
		return nil, err
	}
	o := js.Options()
	return &apiGetter{nc: js.Conn(), prefix: APIPrefix(o), name: stream, timeout: o.DefaultTimeout}, nil
}

// APIPrefix returns the JetStream API subject prefix (with its final dot)
// that a jetstream.JetStream made with these options sends requests to; it
// is jsutil.APIPrefix.
func APIPrefix(o jetstream.JetStreamOptions) string { return jsutil.APIPrefix(o) }

func checkStreamName(name string) error {
	if why := jsutil.NameProblem(name); why != "" {
		return jsutil.Errorf(jsutil.ErrBadInput, "invalid stream name %q: %s", name, why)
	}
	return nil
}

func (g *apiGetter) stream() string { return g.name }

// requestAttempts is how often a request whose answer was lost is sent.
// In a cluster only the stream leader answers message gets, so a request
// that arrives during a leader election is dropped; every request seek
// sends is a read, so sending it again is safe.
const requestAttempts = 2

// send sends one request, each attempt bounded by the JetStream handle's
// default timeout (even under a longer context deadline), and retries a
// request that got no answer.
func (g *apiGetter) send(ctx context.Context, subject string, body []byte) (*nats.Msg, error) {
	var err error
	for attempt := 1; ; attempt++ {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if g.timeout > 0 {
			actx, cancel = context.WithTimeout(ctx, g.timeout)
		}
		var msg *nats.Msg
		msg, err = g.nc.RequestWithContext(actx, subject, body)
		cancel()
		if err == nil {
			return msg, nil
		}
		lost := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders)
		if denied := jsutil.DeniedSubject(g.nc.LastError()); lost && denied != "" {
			// The server refused to route a request of this connection
			// (this one, or one sent alongside it): asking again would
			// only wait out the timeout a second time.
			return nil, jsutil.DeniedError(denied)
		}
		if !lost || attempt >= requestAttempts || ctx.Err() != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// request sends one API request and decodes the JSON reply into v,
// returning the API error the reply carries, if any.
func (g *apiGetter) request(ctx context.Context, api string, body []byte, v any) (*jetstream.APIError, error) {
	msg, err := g.send(ctx, g.prefix+api+"."+g.name, body)
	if err != nil {
		return nil, err
	}
	var env struct {
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &env); err != nil {
		return nil, fmt.Errorf("read reply: %w", err)
	}
	if env.Error != nil {
		return env.Error, nil
	}
	if err := json.Unmarshal(msg.Data, v); err != nil {
		return nil, fmt.Errorf("read reply: %w", err)
	}
	return nil, nil
}

// errUnknownField is a strict server's refusal of start_time.
var errUnknownField = errors.New("server rejected a request field")

func (g *apiGetter) get(ctx context.Context, req getRequest) (*Message, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var reply struct {
		Message *struct {
			Subject  string    `json:"subject"`
			Sequence uint64    `json:"seq"`
			Data     []byte    `json:"data"`
			Header   []byte    `json:"hdrs"`
			Time     time.Time `json:"time"`
		} `json:"message"`
	}
	apiErr, err := g.request(ctx, "STREAM.MSG.GET", body, &reply)
	if err != nil {
		return nil, g.wrap(err)
	}
	if apiErr != nil {
		switch {
		case apiErr.ErrorCode == jetstream.JSErrCodeMessageNotFound:
			return nil, nil
		case apiErr.ErrorCode == jetstream.JSErrCodeStreamNotFound:
			return nil, g.notFound()
		case req.StartTime != nil && apiErr.Code == 400 && strings.Contains(apiErr.Description, "unknown field"):
			return nil, fmt.Errorf("%w: %w", errUnknownField, apiErr)
		}
		return nil, g.wrap(apiErr)
	}
	if reply.Message == nil {
		return nil, g.wrap(jetstream.ErrInvalidJetStreamResponse)
	}
	m := reply.Message
	return &Message{Sequence: m.Sequence, Time: m.Time, Subject: m.Subject, Size: len(m.Data), Data: m.Data, Header: parseHeader(m.Header)}, nil
}

func (g *apiGetter) info(ctx context.Context) (streamState, error) {
	var reply struct {
		Config struct {
			AllowDirect bool `json:"allow_direct"`
		} `json:"config"`
		State streamState `json:"state"`
	}
	apiErr, err := g.request(ctx, "STREAM.INFO", nil, &reply)
	if err != nil {
		return streamState{}, g.wrap(err)
	}
	if apiErr != nil {
		if apiErr.ErrorCode == jetstream.JSErrCodeStreamNotFound {
			return streamState{}, g.notFound()
		}
		return streamState{}, g.wrap(apiErr)
	}
	st := reply.State
	st.AllowDirect = reply.Config.AllowDirect
	return st, nil
}

func (g *apiGetter) notFound() error {
	return jsutil.Errorf(jsutil.ErrNotFound, "stream %q not found", g.name)
}

func (g *apiGetter) wrap(err error) error {
	return jsutil.Wrap(err, "seek stream %q", g.name)
}
