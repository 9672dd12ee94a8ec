package reset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The consumer's configuration is handled as raw JSON so that a recreate
// sends back every field the server reported, including fields this client
// library does not know about.
type rawConfig map[string]json.RawMessage

// consumerState is what planning and execution need to know about one
// consumer: its raw configuration and the decoded info.
type consumerState struct {
	raw  rawConfig
	info *jetstream.ConsumerInfo
}

type rawInfoResponse struct {
	Config rawConfig `json:"config"`
}

// requestTimeout bounds each raw API request (less when ctx says so).
const requestTimeout = 5 * time.Second

// orRequestTimeout is d, or requestTimeout when d is not set.
func orRequestTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		return requestTimeout
	}
	return d
}

// request sends one JetStream API request that changes something through
// jsutil's request layer (jsutil.Request): it is sent again only after a
// transient server error (not applied); after a lost reply the steps of
// apply.go look at what the server holds. The API error comes back as a
// *jetstream.APIError (or nats.go's not-found sentinels), so jsutil.Wrap
// can class it.
func request(ctx context.Context, js jetstream.JetStream, subject string, body []byte) ([]byte, error) {
	return jsutil.Request(ctx, js, subject, body, jsutil.RequestOptions{Timeout: requestTimeout, Once: true})
}

// loadConsumer reads a consumer's info, keeping its configuration raw. The
// read is sent again by the request layer's retry rule while unanswered
// (a replicated consumer electing a leader does not answer), within ctx.
func loadConsumer(ctx context.Context, js jetstream.JetStream, stream, consumer string) (*consumerState, error) {
	data, err := jsutil.Request(ctx, js, fmt.Sprintf("CONSUMER.INFO.%s.%s", stream, consumer), nil, jsutil.RequestOptions{Timeout: requestTimeout})
	if err != nil {
		return nil, err
	}
	return decodeState(data, "consumer info")
}

// decodeState reads a reply holding consumer info (info, create and reset
// replies all do).
func decodeState(data []byte, what string) (*consumerState, error) {
	var raw rawInfoResponse
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	var info jetstream.ConsumerInfo
	if err := json.Unmarshal(data, &info); err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	return &consumerState{raw: raw.Config, info: &info}, nil
}

// createConsumer creates a consumer from a raw configuration with action
// "create": it fails if a consumer of that name exists with a different
// configuration, and returns the existing one if the configuration is the
// same. The state returned is the server's create reply.
func createConsumer(ctx context.Context, js jetstream.JetStream, stream, name string, cfg rawConfig) (*consumerState, error) {
	body, err := json.Marshal(map[string]any{"stream_name": stream, "config": cfg, "action": "create"})
	if err != nil {
		return nil, err
	}
	data, err := request(ctx, js, fmt.Sprintf("CONSUMER.CREATE.%s.%s", stream, name), body)
	if err != nil {
		return nil, err
	}
	return decodeState(data, "consumer create reply")
}

func deleteConsumer(ctx context.Context, js jetstream.JetStream, stream, name string) error {
	_, err := request(ctx, js, fmt.Sprintf("CONSUMER.DELETE.%s.%s", stream, name), nil)
	return err
}

// resetReply is the server's reply to a consumer reset
// (JSApiConsumerResetResponse): the consumer's info just after the reset
// and the sequence it now starts at.
type resetReply struct {
	state    *consumerState
	ResetSeq uint64 `json:"reset_seq"`
}

// resetConsumer calls the server's consumer reset API with a raw request,
// keeping the whole reply. seq 0 resets to the ack floor.
func resetConsumer(ctx context.Context, js jetstream.JetStream, stream, consumer string, seq uint64) (*resetReply, error) {
	var body []byte
	if seq > 0 {
		body = fmt.Appendf(nil, `{"seq":%d}`, seq)
	}
	data, err := request(ctx, js, fmt.Sprintf("CONSUMER.RESET.%s.%s", stream, consumer), body)
	if err != nil {
		return nil, err
	}
	var r resetReply
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("read consumer reset reply: %w", err)
	}
	if r.state, err = decodeState(data, "consumer reset reply"); err != nil {
		return nil, err
	}
	return &r, nil
}

// clone copies a raw configuration.
func (c rawConfig) clone() rawConfig {
	out := make(rawConfig, len(c))
	for k, v := range c {
		out[k] = append(json.RawMessage(nil), v...)
	}
	return out
}

func (c rawConfig) set(key string, v any) {
	b, _ := json.Marshal(v)
	c[key] = b
}

// withStart returns a copy of c that starts at sequence seq, or at time t
// when t is not zero. Nothing else changes.
func (c rawConfig) withStart(seq uint64, t time.Time) rawConfig {
	out := c.clone()
	delete(out, "opt_start_seq")
	delete(out, "opt_start_time")
	if !t.IsZero() {
		out.set("deliver_policy", "by_start_time")
		out.set("opt_start_time", t.UTC().Format(time.RFC3339Nano))
	} else {
		out.set("deliver_policy", "by_start_sequence")
		out.set("opt_start_seq", seq)
	}
	return out
}

// withStartConfig returns a copy of c with start st.
func (c rawConfig) withStartConfig(st Start) rawConfig {
	out := c.clone()
	delete(out, "opt_start_seq")
	delete(out, "opt_start_time")
	out.set("deliver_policy", st.DeliverPolicy)
	if st.OptStartSeq > 0 {
		out.set("opt_start_seq", st.OptStartSeq)
	}
	if st.OptStartTime != nil {
		out.set("opt_start_time", st.OptStartTime.UTC().Format(time.RFC3339Nano))
	}
	return out
}

// withoutServerMetadata drops the metadata keys the server adds itself
// ("_nats." prefix), so they are not sent back as if they were the user's.
func (c rawConfig) withoutServerMetadata() rawConfig {
	out := c.clone()
	raw, ok := out["metadata"]
	if !ok {
		return out
	}
	var md map[string]string
	if err := json.Unmarshal(raw, &md); err != nil {
		return out
	}
	for k := range md {
		if len(k) >= 6 && k[:6] == "_nats." {
			delete(md, k)
		}
	}
	if len(md) == 0 {
		delete(out, "metadata")
	} else {
		out.set("metadata", md)
	}
	return out
}

// lacksResetAPI reports an in-place reset the server could not route: no
// responders or "bad request" for the reset subject. A timeout is not
// that: the reset may have been applied and its reply lost.
func lacksResetAPI(err error) bool {
	if errors.Is(err, jsutil.ErrPermission) {
		return false
	}
	if errors.Is(err, nats.ErrNoResponders) {
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == 10003
}

// lost reports an error after which the request's outcome is unknown or the
// server was briefly unavailable: the request layer's retry rule
// (jsutil.Retryable). It is never a permission denial.
func lost(err error) bool { return jsutil.Retryable(err) }

// wrapConsumer names the stream and consumer in an error.
func wrapConsumer(err error, stream, consumer string) error {
	return jsutil.Wrap(err, "reset consumer %q on %q", consumer, stream)
}
