package acks

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

// Reads that decide what to do with a message (claim, done, floor) go to
// the bucket stream's leader through $JS.API.STREAM.MSG.GET, not through
// kv.Get: KV buckets allow direct gets, which any replica of an R3 bucket
// may answer from a state that lags the leader's. A lagging read can make
// a forgotten record look done (the replay would skip it), a compacted
// message look above the floor (the handler would run again), or a done
// write that landed look lost. The leader has every acknowledged write.

// msgGetReply is the message of the server's answer to a stream
// message-get request (nats-server server/jetstream_api.go
// JSApiMsgGetResponse); its error is read by jsutil's request layer.
type msgGetReply struct {
	Message *struct {
		Subject string    `json:"subject"`
		Seq     uint64    `json:"seq"`
		Header  []byte    `json:"hdrs,omitempty"`
		Data    []byte    `json:"data,omitempty"`
		Time    time.Time `json:"time"`
	} `json:"message,omitempty"`
}

// leaderEntry is the live value of a key as the stream leader has it.
type leaderEntry struct {
	value   []byte
	rev     uint64
	created time.Time
	// marker is set when the key's last message is a delete or purge
	// marker, or the marker left when a per-record TTL ran out; rev is then
	// that marker's revision (a compare-and-set can replace it).
	marker bool
}

// leaderGet returns the live value of kvKey from the bucket stream's
// leader, or an error wrapping jetstream.ErrKeyNotFound when the key has
// none (never written, deleted, purged, or its TTL ran out; for a marker
// the entry holds its revision).
func (s *Store) leaderGet(ctx context.Context, kvKey string) (leaderEntry, error) {
	req, err := json.Marshal(map[string]string{"last_by_subj": "$KV." + s.bucket + "." + kvKey})
	if err != nil {
		return leaderEntry{}, err
	}
	// A read: jsutil's request layer sends it again while unanswered,
	// within the retry budget; each attempt waits at most the handle's
	// default timeout (less when ctx says so).
	data, err := jsutil.Request(ctx, s.js, "STREAM.MSG.GET.KV_"+s.bucket, req, jsutil.RequestOptions{})
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return leaderEntry{}, fmt.Errorf("key %q: %w", kvKey, jetstream.ErrKeyNotFound)
	case err != nil:
		return leaderEntry{}, jsutil.Wrap(err, "get key %q from bucket %q", kvKey, s.bucket)
	}
	var resp msgGetReply
	if err := json.Unmarshal(data, &resp); err != nil {
		return leaderEntry{}, fmt.Errorf("get key %q from bucket %q: unreadable answer: %w", kvKey, s.bucket, err)
	}
	if resp.Message == nil {
		return leaderEntry{}, fmt.Errorf("get key %q from bucket %q: empty answer", kvKey, s.bucket)
	}
	m := resp.Message
	if len(m.Header) > 0 {
		h, err := nats.DecodeHeadersMsg(m.Header)
		if err != nil {
			return leaderEntry{}, fmt.Errorf("get key %q from bucket %q: unreadable headers: %w", kvKey, s.bucket, err)
		}
		// A delete or purge marker, or the marker the server leaves when a
		// per-key TTL runs out: the key has no live value.
		if h.Get("KV-Operation") != "" || h.Get("Nats-Marker-Reason") != "" {
			return leaderEntry{rev: m.Seq, created: m.Time, marker: true}, fmt.Errorf("key %q: %w", kvKey, jetstream.ErrKeyNotFound)
		}
	}
	return leaderEntry{value: m.Data, rev: m.Seq, created: m.Time}, nil
}

// isNotFound reports whether err says a key has no live value.
func isNotFound(err error) bool {
	return errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted)
}
