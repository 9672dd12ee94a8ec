package acks

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jsctl/jsctl/jsutil"
)

// State is the state of an ack record.
type State string

// Record states. A claim is held by a running handler under a lease (a
// per-key TTL); done means the handler succeeded; failed means the handler
// failed (Final: for good, the message was terminated). A failed record is
// never skipped, so the floor never covers a message that was not done.
const (
	StateClaim  State = "claim"
	StateDone   State = "done"
	StateFailed State = "failed"
)

// ParseState reads a state name.
func ParseState(s string) (State, error) {
	switch State(s) {
	case StateClaim, StateDone, StateFailed:
		return State(s), nil
	}
	return "", jsutil.Errorf(jsutil.ErrBadInput, "unknown ack record state %q (want claim, done or failed)", s)
}

// Record is one ack record.
type Record struct {
	// Scope is the record's scope (see DefaultScope).
	Scope string `json:"scope"`
	// Key is the dedup key: the key header's value, or the stream sequence
	// in decimal.
	Key     string  `json:"key"`
	KeyFrom KeyKind `json:"key_from"`
	// KVKey is the key in the bucket.
	KVKey string `json:"kv_key"`
	// Revision is the KV revision of the record's current value.
	Revision uint64 `json:"revision"`
	// Time is when the current value was written.
	Time  time.Time `json:"time"`
	State State     `json:"state"`
	// Seq is the stream sequence of the message the record was made for.
	Seq uint64 `json:"seq"`
	// Hash identifies the payload (a truncated SHA-256, hex).
	Hash string `json:"hash"`
	// Worker names the process that wrote the record.
	Worker string `json:"worker"`
	// Fence is the revision of the claim that led to this value: the
	// fencing token handed to the handler.
	Fence uint64 `json:"fence"`
	// Deliveries is the message's delivery count when it was claimed.
	Deliveries uint64 `json:"deliveries"`
	// LeaseExpires is when a claim's lease runs out unless renewed (zero for
	// done and failed records).
	LeaseExpires time.Time `json:"lease_expires,omitzero"`
	// Reason says why a failed record failed (the handler's error, or why
	// the handler could not run).
	Reason string `json:"reason,omitempty"`
	// Failures counts a failed record's failures; Final says the message
	// failed for good (it was terminated).
	Failures int  `json:"failures,omitempty"`
	Final    bool `json:"final,omitempty"`
	// KeySpec names what produced the dedup key (a key spec such as
	// "header:Nats-Msg-Id" or "json:order.id"; "seq" for the sequence).
	KeySpec string `json:"key_spec,omitempty"`
	// Retention is how long a done or failed record is kept from Time,
	// and Expires when the server removes it (the retention capped by the
	// bucket's max age; zero when the record does not say: earlier
	// versions, and claims, whose lease is LeaseExpires).
	Retention time.Duration `json:"retention,omitempty"`
	Expires   time.Time     `json:"expires,omitzero"`
	// DeadLetter says where a message that failed for good was published
	// (see WithDeadLetter); nil for other records.
	DeadLetter *DeadLetterRef `json:"dead_letter,omitempty"`
	// Size is the number of bytes of the stored value.
	Size int `json:"size"`
	// StreamCreated and ConsumerCreated are the incarnations of the
	// stream and consumer the record was written for (nil: not recorded,
	// by an earlier version, or not known to the writer).
	StreamCreated   *time.Time `json:"stream_created,omitempty"`
	ConsumerCreated *time.Time `json:"consumer_created,omitempty"`
	// Stale says why a sequence-keyed record belongs to another
	// incarnation of its stream (see JudgeRecords): it proves nothing.
	Stale string `json:"stale,omitempty"`
	// Corrupt says why a record does not read (see Filter.Corrupt): only
	// its key, revision, time and size are known.
	Corrupt string `json:"corrupt,omitempty"`

	badStamp bool // its stream creation time does not read
}

// value is the stored form of a record: short field names keep records small.
type value struct {
	State      State  `json:"s"`
	Seq        uint64 `json:"q"`
	Hash       string `json:"h,omitempty"`
	Worker     string `json:"w,omitempty"`
	Fence      uint64 `json:"f,omitempty"`
	Deliveries uint64 `json:"d,omitempty"`
	Expires    int64  `json:"x,omitempty"`  // lease expiry, Unix nanoseconds
	Key        string `json:"k,omitempty"`  // the dedup key, when the record key holds its hash
	Reason     string `json:"r,omitempty"`  // why a failed record failed
	Failures   uint64 `json:"n,omitempty"`  // a failed record's count of failures
	Final      bool   `json:"t,omitempty"`  // a failed record of a message that failed for good
	Spec       string `json:"ks,omitempty"` // the key spec that produced the key
	Retention  int64  `json:"rt,omitempty"` // a done or failed record's retention, seconds
	// A dead letter (failed records): its subject and message ID, and,
	// once published, its stream and sequence.
	DLSubject string `json:"ls,omitempty"`
	DLID      string `json:"li,omitempty"`
	DLStream  string `json:"lt,omitempty"`
	DLSeq     uint64 `json:"lq,omitempty"`
	// The incarnations (creation times, Unix nanoseconds) of the stream
	// and consumer the record was written for.
	// (RFC 3339 with nanoseconds: exact through any JSON tool).
	StreamCreated   string `json:"sc,omitempty"`
	ConsumerCreated string `json:"cc,omitempty"`
}

// DeadLetterRef is where a message that failed for good was dead-lettered.
type DeadLetterRef struct {
	Subject string `json:"subject"`
	// ID is the dead letter's Nats-Msg-Id.
	ID string `json:"id"`
	// Pending: the dead letter may not be published yet (the run writing
	// it stopped); the next delivery of the message, or the next run of
	// Consume on the scope, publishes it under the same ID.
	Pending bool   `json:"pending"`
	Stream  string `json:"stream,omitempty"`
	Seq     uint64 `json:"seq,omitempty"`
}

// decodeValue reads a stored record value; a value that does not read is
// reported as corrupt, naming the key.
func decodeValue(bucket, kvKey string, data []byte) (value, error) {
	var v value
	if err := json.Unmarshal(data, &v); err != nil {
		return v, jsutil.Errorf(jsutil.ErrBadInput, "ack record %q in bucket %q is corrupt: %v", kvKey, bucket, err)
	}
	switch v.State {
	case StateClaim, StateDone, StateFailed:
	default:
		return v, jsutil.Errorf(jsutil.ErrBadInput, "ack record %q in bucket %q is corrupt: unknown state %q", kvKey, bucket, v.State)
	}
	if v.Seq == 0 {
		return v, jsutil.Errorf(jsutil.ErrBadInput, "ack record %q in bucket %q is corrupt: no stream sequence", kvKey, bucket)
	}
	if why := v.implausible(kvKey); why != "" {
		return v, jsutil.Errorf(jsutil.ErrBadInput, "ack record %q in bucket %q is corrupt: %s", kvKey, bucket, why)
	}
	return v, nil
}

// Bounds of the numbers a record may hold: none that jsctl writes comes
// near them.
const (
	maxRecordFailures  = 1 << 31
	maxRecordRetention = 100 * 365 * 24 * 3600 // seconds
)

// implausible says which number of v, stored under kvKey, no jsctl could
// have written ("" when none): a sequence key naming another sequence than
// the record's, a count of failures or a retention out of range.
func (v value) implausible(kvKey string) string {
	if _, kind, key, ok := parseRecordKey(kvKey); ok && kind == KeyFromSequence && key != strconv.FormatUint(v.Seq, 10) {
		return fmt.Sprintf("its key names message %s, its value message %d", key, v.Seq)
	}
	switch {
	case v.Failures > maxRecordFailures:
		return fmt.Sprintf("a count of %d failures", v.Failures)
	case v.Retention < 0 || v.Retention > maxRecordRetention:
		return fmt.Sprintf("a retention of %d seconds", v.Retention)
	}
	return ""
}

func (v value) record(scope string, kind KeyKind, key, kvKey string, rev uint64, t time.Time, size int) Record {
	if key == "" && v.Key != "" {
		key = v.Key
	}
	r := Record{
		Scope: scope, Key: key, KeyFrom: kind, KVKey: kvKey, Revision: rev, Time: t,
		State: v.State, Seq: v.Seq, Hash: v.Hash, Worker: v.Worker, Fence: v.Fence,
		Deliveries: v.Deliveries, Size: size, Reason: v.Reason, KeySpec: v.Spec,
		Failures: int(v.Failures), Final: v.Final,
	}
	if r.Fence == 0 && v.State == StateClaim {
		r.Fence = rev // a claim not yet renewed: its own revision
	}
	r.StreamCreated, r.badStamp = parseStamp(v.StreamCreated)
	r.ConsumerCreated, _ = parseStamp(v.ConsumerCreated)
	if v.Expires != 0 {
		r.LeaseExpires = time.Unix(0, v.Expires)
	}
	if v.Retention > 0 {
		r.Retention = time.Duration(v.Retention) * time.Second
		r.Expires = t.Add(r.Retention)
	}
	if v.DLSubject != "" {
		r.DeadLetter = &DeadLetterRef{Subject: v.DLSubject, ID: v.DLID, Pending: v.DLSeq == 0, Stream: v.DLStream, Seq: v.DLSeq}
	}
	return r
}

// PayloadHash is the hash stored in records: the first 12 bytes of the
// payload's SHA-256, in hex.
func PayloadHash(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:12])
}
