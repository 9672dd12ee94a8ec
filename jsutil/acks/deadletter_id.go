package acks

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Dead-letter IDs and what a "duplicate" answer proves.
//
// A dead letter's Nats-Msg-Id must be unique for as long as the
// dead-letter stream remembers IDs (its duplicate window), or the stream
// drops a new dead letter as a copy of an old one and answers with the old
// one's sequence. The record revision alone is not unique: a bucket
// deleted and made again starts its revisions over. So the ID also names
// the bucket's incarnation (its stream's creation time):
// "jsctl-dl:<bucket>:<created>:<revision>". Records written by earlier
// versions keep the ID they name ("jsctl-dl:<bucket>:<revision>"): a
// pending one is published under it.
//
// An answer flagged duplicate is what a re-publish after a crash gets
// (step 2 of the protocol in deadletter.go ran twice), but also what an ID
// taken by another dead letter gets. It is never taken on trust: the
// stored message the answer names is read back and must be the dead letter
// of the same message (the same stream, sequence, time, scope and key);
// otherwise the publish is an error and the dead letter stays pending.

// deadLetterID is the Nats-Msg-Id of the dead letter recorded over the
// record revision rev: unique per write in this incarnation of the bucket.
func (s *Store) deadLetterID(rev uint64) string {
	return "jsctl-dl:" + s.bucket + ":" + strconv.FormatInt(s.created.UnixNano(), 36) + ":" + strconv.FormatUint(rev, 10)
}

// deadLetterIdentity are the headers that say which message a dead letter
// is for.
var deadLetterIdentity = []string{DeadLetterStreamHdr, DeadLetterSeqHdr, DeadLetterTimeHdr, DeadLetterScopeHdr, DeadLetterKeyB64Hdr}

// publishDeadLetter publishes dead letter m; an answer flagged duplicate is
// accepted only when the stored message it names is the dead letter of the
// same message (see above).
func (s *Store) publishDeadLetter(ctx context.Context, m *nats.Msg) (*jetstream.PubAck, error) {
	ack, err := s.js.PublishMsg(ctx, m)
	if err != nil || !ack.Duplicate {
		return ack, err
	}
	id := m.Header.Get(nats.MsgIdHdr)
	stored, err := s.streamMsgHeader(ctx, ack.Stream, ack.Sequence)
	if err != nil {
		return nil, fmt.Errorf("stream %q took dead letter ID %q as a duplicate of its message %d, which could not be read to check it: %w",
			ack.Stream, id, ack.Sequence, err)
	}
	for _, h := range deadLetterIdentity {
		if stored.Get(h) != m.Header.Get(h) {
			return nil, jsutil.Errorf(jsutil.ErrConflict, "stream %q already holds dead letter ID %q as its message %d, the dead letter of message %s of stream %q (%s %q, not %q): this one was not stored; it is published again once the stream's duplicate window has passed",
				ack.Stream, id, ack.Sequence, stored.Get(DeadLetterSeqHdr), stored.Get(DeadLetterStreamHdr), h, stored.Get(h), m.Header.Get(h))
		}
	}
	return ack, nil
}

// streamMsgHeader reads the headers of message seq of stream (from its
// leader, as leaderGet does).
func (s *Store) streamMsgHeader(ctx context.Context, stream string, seq uint64) (nats.Header, error) {
	m, err := jsutil.LeaderMsgGet(ctx, s.js, stream, map[string]any{"seq": seq})
	if err != nil {
		return nil, jsutil.Wrap(err, "get message %d of stream %q", seq, stream)
	}
	return m.Header, nil
}
