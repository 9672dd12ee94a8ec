// Package positions makes durable consumers' positions first-class objects:
// they can be paused and resumed, checked against thresholds, and saved in
// snapshots that are later compared with where each consumer is now and
// restored through jsutil/reset.
//
// # Selection
//
// A Selection names the consumers a command works on: one stream with
// named consumers, or every durable consumer (All) of one stream or of the
// streams whose names match glob patterns (path.Match syntax). Streams
// behind KV buckets and object stores (KV_*, OBJ_*) match a pattern only
// when the pattern itself starts with that prefix.
//
// # Pause and resume
//
// Pause and Resume use the server's consumer pause API
// ($JS.API.CONSUMER.PAUSE): a paused consumer keeps its position and
// configuration, answers no pull requests and pushes nothing until its
// pause time passes or it is resumed.
//
// # Checks
//
// Check reads each selected consumer once and compares what it reads with
// Thresholds, each with a warning and a critical form; the result uses the
// monitoring convention (OK, WARNING, CRITICAL, UNKNOWN). The counts of the
// consumer's ack records (jsutil/acks: failed records and claims whose
// lease has run out) are read only when a threshold asks for them, because
// reading them scans the scope's records.
//
// # Snapshots
//
// A Snapshot is a versioned JSON document kept under its name in the KV
// bucket JSCTL_SNAPSHOTS (created on first use with the replicas of the
// largest stream it holds). For each consumer it keeps the configuration
// exactly as the server returned it (raw JSON, so fields this client does
// not know survive), the delivered and ack-floor positions with their
// sequences and times, pending and ack-pending counts, and the floor and
// record counts of its ack-record scope; for each stream its first and last
// sequence and time; and when, by whom and on which host it was taken.
//
// The document holds what a restore needs: the next delivery is the saved
// ack floor + 1 (ConsumerSnapshot.NextSequence), and a consumer deleted
// since is created again from its saved configuration. PlanRestore plans
// the restore through jsutil/reset (one plan per stream; reset.Execute
// applies them: intent record, verification, history), so it is previewed,
// crash-safe and undone like any other move.
//
// Compare tells, for each consumer of a snapshot, how far it has moved
// since (messages within its filter, sequences and time) and how its
// configuration changed.
package positions
