// Package reset moves durable JetStream consumers to a new position safely:
// it plans each move (target, method and why), executes it in place with the
// server's consumer reset API or by deleting and recreating the consumer
// with the same configuration, verifies the result from the server's own
// reply, and records every executed move in a KV bucket so it can be undone.
//
// # Crash-safe changes
//
// A change of one consumer runs these steps:
//
//  1. Read the consumer's info: its full raw configuration (exactly as the
//     server returns it, so fields this client does not know survive), its
//     position and its creation time. A consumer that moved since the plan
//     was made is refused, but for its clients' progress under Force or
//     Pause (Options.sincePlan).
//  2. Write an intent record to the KV bucket JSCTL_RESET_INTENTS (key
//     STREAM.CONSUMER, history 1, the stream's replica count) with
//     compare-and-set (create): the configuration, the old position, the
//     target, the method, the configuration a recreate will create, the
//     time, user, host and a change id. A record already there is a
//     conflict: another change of that consumer is running, or was left
//     unfinished, and nothing is changed.
//  3. Make the change: an in-place reset, or a delete and create (after a
//     no-op create that checks permission, and with a temporary consumer
//     holding interest on an interest stream). The delete deletes only the
//     consumer created at the time step 1 read: one made since is left.
//  4. Verify it from the server's reply: the reset reply's reset_seq (the
//     reply is JSApiConsumerResetResponse, read raw to keep all of it), or
//     the create reply's position. Consumer info is read once more only to
//     report what a live client took since.
//  5. Record it in the history bucket JSCTL_RESET_HISTORY with the change
//     id and the full configuration before and after.
//  6. Delete the intent record (compare-and-set on its revision).
//
// A reply lost to a server restart, a leader election or the network is
// followed up: the step looks at what the server holds (is the consumer
// there, created when, with which configuration and position?) and
// finishes, retrying within Options.Settle while the client reconnects.
// Requests go through jsutil's request layer (jsutil.Request): reads are
// sent again under its retry rule, changes only after a transient server
// error, and the follow-up loops are paced by jsutil.Retrier.
// A permission denial is never taken for a lost reply or for a server
// without the reset API: the server reports it to the connection
// (jsutil.RequestError), and the change stops there with nothing changed;
// only a server that really has no reset API makes "auto" recreate.
//
// If the run dies (kill -9, a crash) or cannot finish, the intent record
// stays. consumer ls, info and reset then warn, and PlanRecover /
// ExecuteRecover (jsctl consumer recover) finish the change from what the
// record and the server say: claim the record (a compare-and-set on the
// revision the plan read, so of two runs that planned together only one
// acts), create a missing consumer from the recorded configuration at the
// target, complete a half-made recreate or reset, verify, record in
// history unless the history already has the change id, and delete the
// record.
//
// Every step acts only on the objects the change was planned for, told by
// their creation times through jsutil's identity layer (jsutil.Identity,
// identity.go): a plan, an intent, a history record and a snapshot keep
// the stream's and the consumer's, and an intent also the creation time of
// the consumer its change created (noted just before and right after the
// create). Execute refuses a stream or consumer created again since the
// plan, and a --from-file plan one whose --to-consumer source was;
// --to-previous refuses a history record of another stream or consumer
// than the one of that name now; recover leaves alone a consumer that is
// neither the one the change found nor the one it made, one whose
// configuration was edited since the change recorded it (every method),
// and every consumer of a stream created again since; PlanMoves refuses a
// saved position of a stream created again since, or finds it by its saved
// time (Options.ByTime), and warns about a consumer created again since.
// Each refusal wraps a *jsutil.Recreated naming both creation times.
//
// Records are data (recorded.go): every intent, history record and plan
// file is checked before use (names, subjects, configurations, times,
// numbers, an interest holder and ack records that are the change's own,
// sequences within the stream); one that fails is reported by its key
// (BadRecord) and skipped, and the others still work. What no check can
// prove (who wrote a configuration) is shown before it is applied: recover
// lists the configuration a create or recreate applies (RecoverChange
// ConfigDiff), with the fields that change where messages go or whether
// they are acknowledged warned about, as a restore from a snapshot does.
//
// Because history keeps each change's full configuration, --to-previous
// rebuilds a consumer that no longer exists, and PlanMoves creates
// consumers from saved configurations (a snapshot) with the same steps.
//
// # Pausing instead of forcing
//
// With Options.Pause a consumer a client is reading from is paused for its
// change rather than refused (or moved under the client, as Force does):
// the intent record says so, the consumer is paused, its unacknowledged
// deliveries are waited for (Options.DrainTimeout), the change is made,
// verified and recorded, and the consumer is resumed (unless
// Options.KeepPaused) before the intent record goes. See pause.go.
//
// # Copying a position
//
// A ToConsumer target takes each consumer to where another consumer of the
// stream is (its ack floor + 1, or its delivered + 1). Where the two
// filters differ the plan warns, and it refuses (unless Force) a move that
// skips messages this consumer's filter takes and the source's does not,
// counted exactly (copy.go).
//
// PlanSet and ReadPlans show and read the plans of several streams as one
// document (consumer reset --streams, consumer snapshot restore).
package reset
