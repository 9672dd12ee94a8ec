// Package replica translates positions between a JetStream stream and a
// replica of it (a mirror, or a stream that sources it), here or on another
// cluster or JetStream domain, and measures a replica's lag.
//
// # How a replica records where a message came from (nats-server 2.10+)
//
// Mirror: the server stores each mirrored message at the origin's sequence
// (processInboundMirrorMsg stores with last sequence = origin sequence-1)
// and fills the sequences it did not receive (deleted or expired on the
// origin, or outside the mirror's filter) with skipped, empty slots
// (skipMsgs). A mirror adds no header: its sequence is the origin sequence.
// So the message that came from origin sequence S is the mirror's sequence
// S, and when S was not copied the first message after it is the first
// stored sequence above S. One request.
//
// Source: the server stores each sourced message at the sourcing stream's
// own next sequence, interleaved with the messages of its other sources,
// and adds the header
//
//	Nats-Stream-Source: <name> <seq> <filter> <destination> <subject> [<ident>]
//
// where <seq> is the origin sequence, <subject> the origin subject, and
// <name> <filter> <destination> the source's index name: the origin stream
// name followed by ":" and an 8-character hash of the external API prefix
// when the source is in another domain or account (ExternalStream, e.g.
// "$JS.hub.API"), and ":C=" and a hash of the consumer name for a consumer
// source; <filter> and <destination> are the source's filter and transform
// destination (">" when none, several joined with a form feed). A source
// delivers its origin's messages in order, so within one source the origin
// sequence grows with the target sequence, and Translate binary-searches
// the target's sequences, reading one message per step (a message-get of
// the first message at or after a sequence, on the subjects the source
// writes), skipping messages of other sources (in batched direct gets when
// the server and the target offer them: batch.go). O(log n) requests.
//
// Which source: the target's configuration names its sources; those whose
// stream name is the origin's, and whose domain (from the external API
// prefix) is the origin's, are the origin's. When none can be matched (the
// target copies some other stream, a chain of sources dropped the header,
// the domains differ) there is no exact record, and Translate falls back
// to time: it finds the target's first message stored at or after the
// origin message's time and says so (Method ByTime, Result.Reason). A
// sourced message is stored when it arrives, after the origin stored it,
// so a by-time position errs towards repeating messages, not skipping them;
// when the origin message itself is gone, the time of the one before it is
// used (its copy may have been stored before the next one existed).
//
// # An origin deleted and created again
//
// A replica may hold copies of an earlier stream of the origin's name. A
// mirror goes on from its own last sequence (2.15.2: nothing in
// processInboundMirrorMsg tells a recreated origin; it adds no header),
// keeping each message's origin time; a source (2.14+) notices the new
// identity (the Nats-Stream-Identity of its consumer create's reply) and
// copies the new stream from its start, writing that identity as the last
// field of Nats-Stream-Source. Translate holds every copy against the
// origin's incarnation (jsutil.Identity.CopyOf): its info's creation time,
// or Side.Created for a position saved on an earlier one (refused, as
// jsutil.Recreated, while the origin can be read). A sourced copy of
// another incarnation is stepped over as another source's is; a mirror's
// copy at the position that is older than the origin is answered by time
// (not Exact); a source whose first copy of the current origin after the
// position is of a later sequence, while it holds older copies, is not
// Exact either. Without the identity field (servers before 2.14) a
// sourced copy is judged by the time the replica stored it, within the
// servers' clock difference; with no creation time known (the origin
// unreachable, no snapshot) nothing is checked (Result.OriginCreated nil).
//
// # Not caught up
//
// When the target has not yet received the origin position asked for
// (replication lag: the origin holds messages the target should have copied
// but has not), Translate returns the result (TargetSeq 0, Behind set)
// together with an error of class jsutil.ErrConflict wrapping *BehindError.
// When the origin position was filtered out and nothing after it exists yet,
// the target is caught up and TargetSeq is 0 with StartSeq naming the next
// sequence the target will store.
package replica
