// Package acks is idempotent processing for NATS JetStream: acknowledgment
// records in a JetStream Key-Value bucket make a redelivered message (after
// a restart, a lost ack, an ack timeout, a rebalance between workers or a
// deliberate rewind) ack without running its handler again.
//
// # Records
//
// The bucket (DefaultBucket unless WithBucket) is created on first use with
// history 1, limit markers (which enable per-record TTLs) and no max age:
// every record carries its own TTL. Each message gets one record, keyed by a
// scope (DefaultScope: "STREAM.CONSUMER"; WithScope shares one between
// consumers of the same stream) and a dedup key taken from the message (see
// KeySpec, WithKey, WithKeyFunc): by default the value of the Nats-Msg-Id
// header; a message without its key is keyed by its stream sequence (or,
// WithKeyRequired, fails for good). Every part is encoded with
// jsutil.KeyToken, so any legal name or header value makes a valid key.
// Records store the stream sequence, a payload hash, the key spec that
// produced the key and, once done or failed, their retention.
//
// # Retention
//
// Done and failed records are written with the retention (WithRetention,
// DefaultRetention) as their per-record TTL: the server removes each one
// then. A message whose record expired is still known to be handled by its
// consumer's floor (see Floors), which never expires, so a redelivery is a
// duplicate; Store.Compact deletes done records earlier, once every floor
// of their scope covers them. Forgetting records (Store.ForgetRange) lowers
// the floors, so a rewind runs the forgotten messages again.
//
// # Protocol
//
// Every write is a compare-and-set on the key's KV revision (records are
// published to the bucket's subject with Nats-Expected-Last-Subject-Sequence
// and Nats-TTL):
//
//   - claim: "expected revision 0" with a per-record TTL, the lease, so it
//     succeeds only on a key with no message; over a marker (released,
//     forgotten, or a lease that ran out) or a failed record it is a
//     compare-and-set on that revision. Exactly one worker wins. The claim's
//     revision is the fencing token handed to the handler (Delivery.Fence):
//     it grows with every claim, so downstream systems can refuse stale
//     writers. Consume claims a message as it is fetched (see Consume).
//   - renew: while the handler runs, claims are rewritten with the revision
//     held and a fresh TTL (see MinReplicatedLease for the timing and what
//     it guarantees). A failed compare-and-set means the lease was lost: the
//     handler's context is cancelled and nothing is acked or marked done.
//   - done: on success the claim becomes a done record with the retention
//     as its TTL (WithRetention, DefaultRetention), then the message is
//     acked (a plain ack: a lost ack only causes a redelivery, which the
//     done record catches).
//   - failed: on failure the claim becomes a failed record with the reason
//     and the count of failures, and the message is nak'd with a delay that
//     doubles per failure (WithRetryDelay). At WithMaxFailures failures, or
//     on the consumer's last allowed delivery (MaxDeliver), the failed
//     record is final and the message is terminated. A handler that cannot
//     run for a message (CannotRun, a corrupt record) ends the same way after
//     WithMaxCannotRun deliveries. No message is ever redelivered in a tight
//     loop.
//   - released: a handler ended by the run's own stop (ErrStopped: the
//     drain timeout after the context of Consume or Retry was cancelled)
//     that fails gives its claim back: the failed record it took over is
//     written back as it was, else the claim is purged (compare-and-set on
//     its revision); the message is nak'd without a delay. A stop counts
//     toward no failure bound and never makes a dead letter.
//   - expiry: a dead worker's claim is removed by the server when its TTL
//     runs out, leaving a marker; the next delivery claims it again.
//
// A delivery that finds a done record acks without running the handler
// (Duplicate; Result.Mismatch reports a different payload under the same
// key), unless WithOnDuplicate or WithOnMismatch say to run it anyway (with
// no claim and no record written: Delivery.Duplicate) or to fail it
// (MismatchFail). One that finds another worker's live claim is nak'd with a
// delay (Busy) rather than run. One that finds a failed record takes it over
// and runs again, unless the record is of this very message and it was
// dead-lettered (WithDeadLetter; see deadletter.go for the order of writes
// that makes a crash neither lose nor repeat a dead letter): then the
// message is terminated. Store.Retry runs failed messages again on purpose,
// read from the stream by sequence, through the same claim → done path.
//
// # Floors
//
// Each consumer has a floor record in each scope it uses (see Floor): the
// ranges of stream sequences whose messages it proved handled, from its
// ack floor, with its filters. A claimed message that its consumer's floor
// covers was handled before and its record compacted or expired: it is a
// duplicate (Result.BelowFloor). The floor of one consumer never decides for
// another, a floor past the stream's end is corrupt and ignored, and
// Store.ForgetRange lowers the floors of a scope so that a rewind really
// runs the forgotten messages again. Store.Compact deletes the done records
// every floor of their scope covers.
package acks
