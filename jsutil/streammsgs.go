package jsutil

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// MsgStamp is where and when a stored message is: its stream sequence,
// subject and stored time.
type MsgStamp struct {
	Seq     uint64
	Subject string
	Time    time.Time
}

// StreamMsgs reads the sequence, subject and time of single stored messages
// of one stream, for the figures jsctl shows (the time of a consumer's ack
// floor, the age of the oldest message it can still receive). It reads by
// direct get ($JS.API.DIRECT.GET.<stream>, which any replica answers) when
// the stream allows direct gets, else by the stream leader's message get
// ($JS.API.STREAM.MSG.GET.<stream>), both through the request layer.
//
// A direct get the server's permissions refuse makes it read by message
// get instead, at once (the run's Refusals end the refused request as soon
// as the server reports it, see WithRefusals) and for the rest of the run:
// every StreamMsgs of the stream made with that run's context starts with
// message gets, and the run's callback is told once. The refusal is
// marked handled, so no later error is blamed on it.
//
// Every error means the message is not known (refused, unanswered,
// unreadable): callers report the figure as unknown, never as absent or
// as zero. It is safe for concurrent use.
type StreamMsgs struct {
	js      jetstream.JetStream
	stream  string
	timeout time.Duration

	mu     sync.Mutex
	direct bool
}

// NewStreamMsgs returns a reader of stream's messages; allowDirect is the
// stream's allow_direct; timeout bounds each request (zero: the handle's
// default).
func NewStreamMsgs(js jetstream.JetStream, stream string, allowDirect bool, timeout time.Duration) *StreamMsgs {
	return &StreamMsgs{js: js, stream: stream, timeout: timeout, direct: allowDirect}
}

// At returns the message at seq, nil when the stream holds none there
// (never written, deleted, or outside the stream).
func (s *StreamMsgs) At(ctx context.Context, seq uint64) (*MsgStamp, error) {
	if seq == 0 {
		return nil, nil
	}
	return s.get(ctx, seq, "")
}

// Next returns the first message at or after seq whose subject matches
// filter ("" or ">": any), stepping over deleted sequences on the server;
// nil when there is none.
func (s *StreamMsgs) Next(ctx context.Context, seq uint64, filter string) (*MsgStamp, error) {
	if filter == "" {
		filter = ">"
	}
	return s.get(ctx, max(seq, 1), filter)
}

// msgRequest is the part of the server's JSApiMsgGetRequest used here; a
// direct get takes the same body.
type msgRequest struct {
	Seq     uint64 `json:"seq"`
	NextFor string `json:"next_by_subj,omitempty"`
}

func (s *StreamMsgs) get(ctx context.Context, seq uint64, filter string) (*MsgStamp, error) {
	body, err := json.Marshal(msgRequest{Seq: seq, NextFor: filter})
	if err != nil {
		return nil, err
	}
	if s.useDirect(ctx) {
		m, err := s.directGet(ctx, body)
		if !errors.Is(err, ErrPermission) {
			return m, err
		}
		s.directRefused(ctx)
	}
	return s.msgGet(ctx, body)
}

// useDirect says whether to read by direct get: the stream allows it and
// no direct get of it was refused in this run.
func (s *StreamMsgs) useDirect(ctx context.Context) bool {
	s.mu.Lock()
	direct := s.direct
	s.mu.Unlock()
	if !direct {
		return false
	}
	if DirectGetsRefused(ctx, s.stream) {
		s.mu.Lock()
		s.direct = false
		s.mu.Unlock()
		return false
	}
	return true
}

// directRefused switches to message gets for the rest of the run and says
// so once.
func (s *StreamMsgs) directRefused(ctx context.Context) {
	s.mu.Lock()
	s.direct = false
	s.mu.Unlock()
	get := APIPrefix(s.js.Options()) + "STREAM.MSG.GET." + s.stream
	DirectGetRefused(ctx, s.js, s.stream, fmt.Sprintf("reading them with message gets (%q)", get))
}

// DirectGetRefused records, for the rest of ctx's run, that the server
// refused this user's direct gets of stream (DirectGetsRefused then says
// so), marks the refusal handled, and tells the run's callback once what
// jsctl does instead (instead: "reading them with message gets (...)").
func DirectGetRefused(ctx context.Context, js jetstream.JetStream, stream, instead string) {
	direct := APIPrefix(js.Options()) + "DIRECT.GET." + stream
	r := RefusalsOf(ctx)
	r.Handled(direct)
	r.setDirectOff(stream)
	r.NoteOnce("direct get "+stream, fmt.Sprintf("this user may not read messages of stream %q by direct get (the server refused a publish to %q): %s for the rest of this run", stream, direct, instead))
}

// DirectGetsRefused says whether a direct get of stream was refused in
// ctx's run (see DirectGetRefused).
func DirectGetsRefused(ctx context.Context, stream string) bool {
	return RefusalsOf(ctx).directOff(stream)
}

func (s *StreamMsgs) directGet(ctx context.Context, body []byte) (*MsgStamp, error) {
	m, err := RequestMsg(ctx, s.js, "DIRECT.GET."+s.stream, body, RequestOptions{Timeout: s.timeout})
	if err != nil {
		return nil, err
	}
	switch status := m.Header.Get("Status"); status {
	case "":
	case "404":
		return nil, nil
	default:
		return nil, fmt.Errorf("direct get of stream %q: status %s %s", s.stream, status, m.Header.Get("Description"))
	}
	seq, serr := strconv.ParseUint(m.Header.Get("Nats-Sequence"), 10, 64)
	t, terr := time.Parse(time.RFC3339Nano, m.Header.Get("Nats-Time-Stamp"))
	if serr != nil || terr != nil || seq == 0 {
		return nil, fmt.Errorf("direct get of stream %q: the reply has no readable sequence and time (Nats-Sequence %q, Nats-Time-Stamp %q)",
			s.stream, m.Header.Get("Nats-Sequence"), m.Header.Get("Nats-Time-Stamp"))
	}
	return &MsgStamp{Seq: seq, Subject: m.Header.Get("Nats-Subject"), Time: t.UTC()}, nil
}

func (s *StreamMsgs) msgGet(ctx context.Context, body []byte) (*MsgStamp, error) {
	data, err := Request(ctx, s.js, "STREAM.MSG.GET."+s.stream, body, RequestOptions{Timeout: s.timeout})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var reply struct {
		Message *RawMsg `json:"message"`
	}
	if err := json.Unmarshal(data, &reply); err != nil || reply.Message == nil || reply.Message.Seq == 0 {
		return nil, fmt.Errorf("message get of stream %q: unreadable answer: %w", s.stream, jetstream.ErrInvalidJetStreamResponse)
	}
	return &MsgStamp{Seq: reply.Message.Seq, Subject: reply.Message.Subject, Time: reply.Message.Time.UTC()}, nil
}

// directOff says whether a direct get of stream was refused in this run.
func (r *Refusals) directOff(stream string) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.direct[stream]
}

func (r *Refusals) setDirectOff(stream string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.direct == nil {
		r.direct = map[string]bool{}
	}
	r.direct[stream] = true
}
