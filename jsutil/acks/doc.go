// Package acks is idempotent processing for NATS JetStream: acknowledgment
// records in a JetStream Key-Value bucket make a redelivered message (after
// a restart, a lost ack, an ack timeout, a rebalance between workers or a
// deliberate rewind) ack without running its handler again.
//
// # Records
//
// The bucket (DefaultBucket unless WithBucket) is created on first use with
// history 1, a retention TTL for finished records (DefaultRetention) and
// limit markers, which enable per-key TTLs. Each message gets one record,
// keyed by a scope (DefaultScope: "STREAM.CONSUMER"; WithScope shares one
// between consumers of the same stream) and a dedup key: the value of the
// key header (Nats-Msg-Id unless WithKeyHeader) when present, else the
// stream sequence. Every part is encoded with jsutil.KeyToken, so any legal
// name or header value makes a valid key. Records store the stream sequence
// and a payload hash.
//
// # Protocol
//
// Every write is a compare-and-set on the key's KV revision:
//
//   - claim: kv.Create with a per-key TTL, the lease. Create succeeds only
//     on an empty key, so exactly one worker wins. The claim's revision is
//     the fencing token handed to the handler (Delivery.Fence): it grows
//     with every claim, so downstream systems can refuse stale writers.
//   - renew: while the handler runs, every third of the lease the claim is
//     written again with the revision it holds as the expected last
//     sequence and a fresh TTL (and the message is marked in progress). A
//     failed compare-and-set means the lease was lost: the handler's context
//     is cancelled and nothing is acked or marked done.
//   - done: on success the claim becomes a done record (no TTL: it lives for
//     the bucket's retention) and then the message is double-acked.
//   - release: on failure the claim is purged (expected revision) and the
//     message nak'd for redelivery. On the consumer's last allowed delivery
//     a failed record is kept instead, so the floor never covers it.
//   - expiry: a dead worker's claim is removed by the server when its TTL
//     runs out, leaving a limit marker; the next delivery claims it again.
//
// A delivery that finds a done record acks without running the handler
// (Duplicate; Result.Mismatch reports a different payload under the same
// key). One that finds another worker's live claim is nak'd with a delay
// (Busy) rather than run.
//
// Each scope has a floor record: the consumer's ack floor, advanced by
// compare-and-set as Consume runs. Every message at or below it is done, so
// its done records can be compacted (Store.Compact); a message at or below
// the floor without a record counts as done, and a recreated consumer can
// start after it (Store.Floor). Store.ForgetRange deletes the records of a
// range of stream sequences and lowers the floor, so that a rewind really
// runs those messages again.
package acks
