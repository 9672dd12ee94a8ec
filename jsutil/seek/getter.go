package seek

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

// apiGetter sends JetStream API requests about one stream through jsutil's
// request layer (jsutil.Request: the domain's API prefix, one retry rule;
// every request seek sends is a read, so one left unanswered, as during a
// stream leader election, is sent again within the retry budget).
type apiGetter struct {
	js   jetstream.JetStream
	name string
}

func newAPIGetter(js jetstream.JetStream, stream string) (*apiGetter, error) {
	if js == nil || js.Conn() == nil {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "seek stream %q: no jetstream connection", stream)
	}
	if err := checkStreamName(stream); err != nil {
		return nil, err
	}
	return &apiGetter{js: js, name: stream}, nil
}

func checkStreamName(name string) error {
	if why := jsutil.NameProblem(name); why != "" {
		return jsutil.Errorf(jsutil.ErrBadInput, "invalid stream name %q: %s", name, why)
	}
	return nil
}

func (g *apiGetter) stream() string { return g.name }

// request sends one API request about the stream and decodes the JSON
// reply into v; an error reply comes back as the error (see
// jsutil.Request).
func (g *apiGetter) request(ctx context.Context, api string, body []byte, v any) error {
	data, err := jsutil.Request(ctx, g.js, api+"."+g.name, body, jsutil.RequestOptions{})
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("read reply: %w", err)
	}
	return nil
}

// errUnknownField is a strict server's refusal of start_time.
var errUnknownField = errors.New("server rejected a request field")

func (g *apiGetter) get(ctx context.Context, req getRequest) (*Message, error) {
	m, err := jsutil.MsgGet(ctx, g.js, g.name, req)
	var apiErr *jetstream.APIError
	switch {
	case err == nil:
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return nil, nil
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return nil, g.notFound()
	case req.StartTime != nil && errors.As(err, &apiErr) && apiErr.Code == 400 && strings.Contains(apiErr.Description, "unknown field"):
		return nil, fmt.Errorf("%w: %w", errUnknownField, apiErr)
	default:
		return nil, g.wrap(err)
	}
	return &Message{Sequence: m.Seq, Time: m.Time, Subject: m.Subject, Size: len(m.Data), Data: m.Data, Header: parseHeader(m.Header)}, nil
}

func (g *apiGetter) info(ctx context.Context) (streamState, error) {
	var reply struct {
		Config struct {
			AllowDirect bool `json:"allow_direct"`
		} `json:"config"`
		State streamState `json:"state"`
	}
	if err := g.request(ctx, "STREAM.INFO", nil, &reply); err != nil {
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return streamState{}, g.notFound()
		}
		return streamState{}, g.wrap(err)
	}
	st := reply.State
	st.AllowDirect = reply.Config.AllowDirect
	return st, nil
}

func (g *apiGetter) notFound() error {
	return jsutil.Errorf(jsutil.ErrNotFound, "stream %q not found", g.name)
}

// wrap names the stream in err. A refusal by the server's permissions is
// worded by what the user may not do (jsutil.DeniedError), naming the
// subject the server refused for this request: the one err names, never
// the connection's last refusal, which may be another request's.
func (g *apiGetter) wrap(err error) error {
	if errors.Is(err, jsutil.ErrPermission) {
		if denied := jsutil.DeniedSubject(err); denied != "" {
			err = jsutil.DeniedError(denied)
		}
	}
	return jsutil.Wrap(err, "seek stream %q", g.name)
}
