package positions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// Consumer is one consumer as the server reported it, with the stored
// times of its positions and its lag.
type Consumer struct {
	Stream string
	Name   string
	// Config is the configuration exactly as the server returned it.
	Config json.RawMessage
	// Info is the same reply, decoded.
	Info *jetstream.ConsumerInfo
	// DeliveredTime and AckFloorTime are the stored times of the messages
	// at those stream sequences (nil when there is none, or when Unknown
	// lists them).
	DeliveredTime *time.Time
	AckFloorTime  *time.Time
	// LagMessages is pending + ack pending; LagNS is the age of the
	// oldest message the consumer can still receive (jsutil.ConsumerLag,
	// as jsctl consumer ls reports them); LagKnown is false when the read
	// that measures it was refused or went unanswered (see Unknown).
	LagMessages uint64
	LagNS       int64
	LagKnown    bool
	// Unknown lists the figures above that could not be measured, and why.
	Unknown []jsutil.Unknown
}

// unknownReason is why figure is not known ("" when it is).
func (c *Consumer) unknownReason(figure string) string {
	for _, u := range c.Unknown {
		if u.Figure == figure {
			return u.Reason
		}
	}
	return ""
}

// Durable reports whether the consumer is durable.
func (c *Consumer) Durable() bool { return c.Info.Config.Durable != "" }

// Filters are the consumer's filter subjects (none for all subjects).
func (c *Consumer) Filters() []string { return filtersOf(c.Info.Config) }

func filtersOf(cfg jetstream.ConsumerConfig) []string {
	if cfg.FilterSubject != "" {
		return []string{cfg.FilterSubject}
	}
	return cfg.FilterSubjects
}

// streamReader reads one stream's state and its consumers, remembering the
// message times it looked up.
type streamReader struct {
	js     jetstream.JetStream
	opts   Options
	stream jetstream.Stream
	info   *jetstream.StreamInfo
	msgs   *jsutil.StreamMsgs
	times  map[uint64]msgTime
}

// msgTime is a message's stored time (nil when there is none) or why it is
// not known.
type msgTime struct {
	t   *time.Time
	err error
}

// openStream reads a stream's info. Errors name the stream.
func openStream(ctx context.Context, js jetstream.JetStream, name string, opts Options) (*streamReader, error) {
	if err := checkName("stream", name); err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	rctx, stop := jsutil.EndOnRefusal(rctx, jsutil.APIPrefix(js.Options())+"STREAM.INFO."+name)
	defer stop()
	s, err := js.Stream(rctx, name)
	if err != nil {
		return nil, jsutil.Wrap(jsutil.RefusedCause(rctx, err), "stream %q", name)
	}
	info := s.CachedInfo()
	return &streamReader{js: js, opts: opts, stream: s, info: info, times: map[uint64]msgTime{},
		msgs: jsutil.NewStreamMsgs(js, name, info.Config.AllowDirect, opts.Timeout)}, nil
}

// name is the stream's name.
func (r *streamReader) name() string { return r.info.Config.Name }

// msgTime is the stored time of message seq, nil when there is none; an
// error says it is not known (a refused or unanswered read).
func (r *streamReader) msgTime(ctx context.Context, seq uint64) (*time.Time, error) {
	if seq == 0 || seq < r.info.State.FirstSeq || seq > r.info.State.LastSeq {
		return nil, nil
	}
	if t, ok := r.times[seq]; ok {
		return t.t, t.err
	}
	var out msgTime
	m, err := r.msgs.At(ctx, seq)
	switch {
	case err != nil:
		out.err = jsutil.Wrap(err, "read the time of message %d of stream %q", seq, r.name())
	case m != nil:
		t := m.Time.UTC()
		out.t = &t
	}
	r.times[seq] = out
	return out.t, out.err
}

// consumer reads one consumer with a raw CONSUMER.INFO request, so the
// configuration is kept exactly as the server sent it. Errors name the
// consumer and the stream.
func (r *streamReader) consumer(ctx context.Context, name string) (*Consumer, error) {
	if err := checkName("consumer", name); err != nil {
		return nil, err
	}
	stream := r.name()
	data, err := r.request(ctx, fmt.Sprintf("CONSUMER.INFO.%s.%s", stream, name), nil)
	if err != nil {
		return nil, jsutil.Wrap(err, "consumer %q on %q", name, stream)
	}
	var raw struct {
		Config json.RawMessage `json:"config"`
	}
	var info jetstream.ConsumerInfo
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("consumer %q on %q: read info: %w", name, stream, err)
	}
	if err := json.Unmarshal(data, &info); err != nil {
		return nil, fmt.Errorf("consumer %q on %q: read info: %w", name, stream, err)
	}
	c := &Consumer{Stream: stream, Name: name, Config: raw.Config, Info: &info}
	var terr error
	if c.DeliveredTime, terr = r.msgTime(ctx, info.Delivered.Stream); terr != nil {
		c.Unknown = append(c.Unknown, jsutil.Unknown{Figure: "delivered_time", Reason: terr.Error()})
	}
	if c.AckFloorTime, terr = r.msgTime(ctx, info.AckFloor.Stream); terr != nil {
		c.Unknown = append(c.Unknown, jsutil.Unknown{Figure: "ack_floor_time", Reason: terr.Error()})
	}
	lag := jsutil.ConsumerLag(ctx, r.msgs, &info, r.info.State.FirstSeq, r.opts.Now())
	c.LagMessages = lag.Messages
	if lag.Age != nil {
		c.LagNS, c.LagKnown = lag.Age.Nanoseconds(), true
	} else {
		c.Unknown = append(c.Unknown, jsutil.Unknown{Figure: "lag_ns", Reason: jsutil.Wrap(lag.Err, "find the oldest message consumer %q can still receive on %q", name, stream).Error()})
	}
	return c, nil
}

// durables lists the names of the stream's durable consumers, sorted.
func (r *streamReader) durables(ctx context.Context) ([]string, error) {
	var out []string
	list := r.stream.ListConsumers(ctx)
	for ci := range list.Info() {
		// Ephemeral consumers belong to a running client, and those the
		// server made for mirrors and sources to the server.
		if ci.Config.Durable != "" && jsutil.ServerOwner(ci.Name, ci.Config.Metadata) == "" {
			out = append(out, ci.Name)
		}
	}
	if err := list.Err(); err != nil {
		return nil, jsutil.Wrap(err, "list consumers of %q", r.name())
	}
	sortStrings(out)
	return out, nil
}

// request sends one JetStream API request through jsutil's request layer
// (a read: sent again while unanswered, within the retry budget) and
// returns the reply, or the API error it carries (consumer and stream not
// found as nats.go's sentinels, so jsutil.Wrap words them plainly).
func (r *streamReader) request(ctx context.Context, subject string, body []byte) ([]byte, error) {
	return jsutil.Request(ctx, r.js, subject, body, jsutil.RequestOptions{Timeout: r.opts.Timeout})
}

// isNotFound reports whether err says a stream or consumer does not exist.
func isNotFound(err error) bool {
	return errors.Is(err, jsutil.ErrNotFound)
}
