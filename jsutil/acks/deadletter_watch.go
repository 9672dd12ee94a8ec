package acks

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Dead-letter watches: a record "d.<scope>.<dedup>" naming a message on
// one of its last allowed deliveries (see the protocol in deadletter.go),
// written as the message is fetched and removed once it is settled.

const watchPrefix = "d."

// watchValue is a dead-letter watch: the message on its last allowed
// delivery and what its dead letter needs.
type watchValue struct {
	Stream     string  `json:"st"`
	Consumer   string  `json:"c"`
	Seq        uint64  `json:"q"`
	Subject    string  `json:"ls"` // the dead-letter subject
	Deliveries uint64  `json:"d"`
	Key        string  `json:"k"`
	KeyFrom    KeyKind `json:"kf"`
	Spec       string  `json:"ks,omitempty"`
}

func watchKey(recordKey string) string {
	return watchPrefix + strings.TrimPrefix(recordKey, recordPrefix)
}

// watchLastDelivery writes j's watch when this is a redelivery, or one of
// its last two allowed deliveries (see the protocol above). Watches are kept
// whether or not a dead-letter subject is set: without the final failed
// record a sweep writes, the consumer's floor would pass a message the
// server gave up on as handled. Any redelivery is watched (not only the
// last two), so that a message is lost to a crash only if every one of its
// redeliveries was cut before its watch was sent; first deliveries are not
// (they would cost a write per message). The write is published without
// waiting: it leaves the process at once, and the fetcher goes on.
func (s *Store) watchLastDelivery(ctx context.Context, j *job, c *processConfig) {
	if !j.d.Idempotent || j.d.Retry || c.maxDeliver <= 0 || (j.d.Deliveries < 2 && j.d.Deliveries+1 < uint64(c.maxDeliver)) {
		return
	}
	b, _ := json.Marshal(watchValue{Stream: j.d.Stream, Consumer: j.d.Consumer, Seq: j.d.Seq, Subject: c.deadLetter,
		Deliveries: j.d.Deliveries, Key: j.d.Key, KeyFrom: j.d.KeyFrom, Spec: j.d.KeySpec})
	m := nats.NewMsg(s.subject + watchKey(j.kvKey))
	m.Data = b
	// A watch lives no longer than the records it watches over: one left
	// behind (its run stopped between the ack and the watch's removal)
	// must not outlive the done record and read as a delivery that ended
	// without an outcome.
	m.Header.Set(jetstream.MsgTTLHeader, s.doneTTL().String())
	_, err := s.js.PublishMsgAsync(m)
	j.watch = err == nil
}

// dropWatch removes j's watch once its message is settled.
func (s *Store) dropWatch(ctx context.Context, j *job) {
	if !j.watch {
		return
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeAttempt)
	defer cancel()
	if s.kv.Purge(wctx, watchKey(j.kvKey), jetstream.PurgeTTL(s.markerTTL)) == nil {
		j.watch = false
	}
}
