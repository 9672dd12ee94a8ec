package jsutil

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// KV reads that decide what to do (a claim, a done record, an unfinished
// change) go to the bucket stream's leader through $JS.API.STREAM.MSG.GET,
// not through kv.Get: KV buckets allow direct gets, which any replica of a
// replicated bucket may answer from a state that lags the leader's. The
// leader has every acknowledged write.

// KVEntry is the live value of a key as the bucket stream's leader has it.
type KVEntry struct {
	Value    []byte
	Revision uint64
	Created  time.Time
	// Marker is set when the key's last message is a delete or purge
	// marker, or the marker left when a per-key TTL ran out; Revision is
	// then that marker's (a compare-and-set can replace it).
	Marker bool
}

// KVLeaderGet returns the live value of key in bucket from the bucket
// stream's leader, or an error wrapping jetstream.ErrKeyNotFound when the
// key has none (never written, deleted, purged, or its TTL ran out; for a
// marker the entry holds its revision). It is a read: the request layer
// sends it again while unanswered, within the retry budget.
func KVLeaderGet(ctx context.Context, js jetstream.JetStream, bucket, key string) (KVEntry, error) {
	m, err := LeaderMsgGet(ctx, js, "KV_"+bucket, map[string]any{"last_by_subj": "$KV." + bucket + "." + key})
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return KVEntry{}, fmt.Errorf("key %q: %w", key, jetstream.ErrKeyNotFound)
	case err != nil:
		return KVEntry{}, Wrap(err, "get key %q from bucket %q", key, bucket)
	}
	if m.Header.Get("KV-Operation") != "" || m.Header.Get("Nats-Marker-Reason") != "" {
		return KVEntry{Revision: m.Seq, Created: m.Time, Marker: true}, fmt.Errorf("key %q: %w", key, jetstream.ErrKeyNotFound)
	}
	return KVEntry{Value: m.Data, Revision: m.Seq, Created: m.Time}, nil
}

// LeaderMsg is a stored message as a stream's leader returned it.
type LeaderMsg struct {
	Subject string
	Seq     uint64
	Header  nats.Header // never nil
	Data    []byte
	Time    time.Time
}

// LeaderMsgGet sends a message-get request (req: seq, last_by_subj, ...)
// to the leader of stream through $JS.API.STREAM.MSG.GET and decodes the
// message's headers. A message that is not there is an error wrapping
// jetstream.ErrMsgNotFound.
func LeaderMsgGet(ctx context.Context, js jetstream.JetStream, stream string, req any) (*LeaderMsg, error) {
	m, err := MsgGet(ctx, js, stream, req)
	if err != nil {
		return nil, err
	}
	out := &LeaderMsg{Subject: m.Subject, Seq: m.Seq, Header: nats.Header{}, Data: m.Data, Time: m.Time}
	if len(m.Header) > 0 {
		if out.Header, err = nats.DecodeHeadersMsg(m.Header); err != nil {
			return nil, fmt.Errorf("unreadable headers: %w", err)
		}
	}
	return out, nil
}

// RawMsg is a stored message as $JS.API.STREAM.MSG.GET returns it, its
// headers still encoded ("NATS/1.0\r\n..."; nil when none).
type RawMsg struct {
	Subject string    `json:"subject"`
	Seq     uint64    `json:"seq"`
	Header  []byte    `json:"hdrs,omitempty"`
	Data    []byte    `json:"data,omitempty"`
	Time    time.Time `json:"time"`
}

// MsgGet sends one message-get request (req is marshalled to JSON: seq,
// last_by_subj, next_by_subj, start_time, ...) about stream through the
// request layer (Request: the API prefix, one retry rule; an error reply
// comes back as the error, jetstream.ErrMsgNotFound when there is no such
// message). An answer without a message wraps
// jetstream.ErrInvalidJetStreamResponse.
func MsgGet(ctx context.Context, js jetstream.JetStream, stream string, req any) (*RawMsg, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	data, err := Request(ctx, js, "STREAM.MSG.GET."+stream, body, RequestOptions{})
	if err != nil {
		return nil, err
	}
	var resp struct {
		Message *RawMsg `json:"message,omitempty"`
	}
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, fmt.Errorf("unreadable answer: %w: %w", jetstream.ErrInvalidJetStreamResponse, err)
	}
	if resp.Message == nil {
		return nil, fmt.Errorf("answer without a message: %w", jetstream.ErrInvalidJetStreamResponse)
	}
	return resp.Message, nil
}
