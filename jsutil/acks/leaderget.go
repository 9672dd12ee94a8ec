package acks

import (
	"context"
	"errors"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// Reads that decide what to do with a message (claim, done, floor) go to
// the bucket stream's leader (jsutil.KVLeaderGet), not through kv.Get: a
// lagging replica's answer could make a forgotten record look done (the
// replay would skip it), a compacted message look above the floor (the
// handler would run again), or a done write that landed look lost.

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
// none (for a marker the entry holds its revision).
func (s *Store) leaderGet(ctx context.Context, kvKey string) (leaderEntry, error) {
	e, err := jsutil.KVLeaderGet(ctx, s.js, s.bucket, kvKey)
	return leaderEntry{value: e.Value, rev: e.Revision, created: e.Created, marker: e.Marker}, err
}

// isNotFound reports whether err says a key has no live value.
func isNotFound(err error) bool {
	return errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted)
}
