// Package failover moves durable consumers to a replica of their stream: a
// mirror, or a stream that sources it, on the same server or on another
// cluster or JetStream domain.
//
// Sequences differ between an origin and a stream that sources it (and a
// stream can source several origins), so a position is translated, not
// copied: the first origin message a consumer had not finished (its ack
// floor + 1, or its delivered + 1) is found on the target with
// jsutil/replica.Translate, exactly from the server's own records (a
// mirror's sequences, the Nats-Stream-Source header of a sourced message)
// or, where none exist, by time (labelled "by-time", never silently).
//
// PlanCopy reads the origin's consumers (they are never changed) and plans
// each one's copy on the target: created there with its configuration
// (starting by sequence at the translated position; a pause and more
// replicas than the target stream has are dropped, with a warning;
// filters are mapped through the link's subject transform, and a filter
// the target does not receive is warned about), or, where it exists on the
// target already, moved there. The change is a jsutil/reset plan for the
// target stream: reset.Execute applies it on the target's connection with
// an intent record, verification from the server's reply and a history
// record in the target's buckets, bound to the target stream's creation
// time, and reset.PlanRecover / ExecuteRecover finish a killed run there.
//
// A position the target has not received yet (replication lag) is refused
// (Plan.Changes.Err, jsutil.ErrConflict) unless Options.AllowLag, and so is
// one that cannot be translated exactly (by time, or where the target's
// copies came from an earlier stream of the origin's name: see
// jsutil/replica) unless Options.AllowInexact. PlanSnapshot holds the
// target's copies against the origin the snapshot saw.
//
// PlanSnapshot does the same from a snapshot saved on the origin
// (jsutil/positions), so positions saved before an incident are restored
// on the replica.
package failover
