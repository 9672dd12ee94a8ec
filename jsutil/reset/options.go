package reset

import (
	"context"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// Options tune planning and execution. The zero value is usable.
type Options struct {
	// Method forces a method; "" or Auto picks one per consumer.
	Method Method
	// Force allows refused changes: busy consumers and forward moves that
	// can remove messages from interest or work-queue streams.
	Force bool
	// Pause pauses each consumer for its change instead of refusing it when
	// a client is reading from it (see PauseStep): paused, its deliveries
	// settled (at most DrainTimeout), changed, verified, then resumed, or
	// left paused with KeepPaused.
	Pause        bool
	DrainTimeout time.Duration // default 30s
	KeepPaused   bool
	// Drain, when set, is told how the wait for a paused consumer's
	// deliveries goes: at its start, at each look (every 50 to 200 ms) and
	// at its end (Drain.Outcome set). Calls for different consumers may
	// come from different goroutines at once.
	Drain func(Drain)
	// Unpin releases the consumers' pinned clients after the move (see
	// Unpin; the plan's Change.Priority says so).
	Unpin bool
	// ForgetAcks deletes the ack records of the replayed range (jsutil/acks)
	// before moving a consumer back.
	ForgetAcks bool
	// AcksBucket is the ack-record bucket ("" = acks.DefaultBucket).
	AcksBucket string
	// AcksScope is the ack-record scope ("" = each consumer's default scope).
	AcksScope string
	// HistoryBucket is the KV bucket of reset history ("" = HistoryBucket).
	HistoryBucket string
	// Seek finds sequences for times (nil = DefaultSeek).
	Seek SeekFunc
	// Timeout bounds each request to the server (default 5s).
	Timeout time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// User and Host are recorded in history (defaults: the OS user and host).
	User, Host string
	// Reason is why the change is made (--reason): recorded in the intent
	// and history records.
	Reason string
	// Ended, when set, is told of each change once its outcome is known,
	// before its intent record is removed: a run killed before Ended
	// returns leaves the change to `consumer recover`, which tells Ended
	// again (Outcome OutcomeRecovered). jsctl writes the audit event
	// there. Calls for different consumers may come at once.
	Ended func(ctx context.Context, e Ended)
	// IntentBucket is the KV bucket of intent records ("" = IntentBucket).
	IntentBucket string
	// Settle bounds how long a change whose reply was lost (a server
	// restart, a leader election, a network fault) keeps finding out what
	// happened and finishing it before it gives up and leaves the change
	// to `consumer recover` (default 30s). A context made with
	// jsutil.WithRetry bounds the whole outage by its budget as well, and
	// its callback is told each time a loop asks again (jsctl: --retry-for).
	Settle time.Duration
	// Concurrency is how many consumers are planned, and changed, at once
	// (default 8). Execution runs the first change alone, so a refusal or a
	// server without the reset API shows before the others start.
	Concurrency int
	// ShowMessages, when above zero, lists in each change up to this many
	// of the messages it redelivers or skips (Change.Messages).
	ShowMessages int
	// Progress, when set, is called as consumers are planned and as
	// changes are executed, with how many are done of how many in all
	// (calls never overlap).
	Progress func(done, total int)
	// ByTime makes PlanMoves find each saved position by its saved time
	// (the first message after the saved ack floor's time) rather than by
	// its sequence, as for a stream deleted and created again since.
	ByTime bool

	// Test seams.
	// beforeCreate runs after a recreate deleted the consumer and before
	// it creates it again.
	beforeCreate func() error
	// inPlace replaces the server's reset API (servers without it).
	inPlace func(ctx context.Context, js jetstream.JetStream, stream, consumer string, seq uint64) (*resetReply, error)
	// lose, when it returns true for an operation ("delete", "create",
	// "reset"), drops the server's reply to that request after the server
	// applied it, as a lost reply would.
	lose func(op string) bool
	// crash, when it returns true at a step ("intent", "paused",
	// "deleted", "created", "applied", "recorded", "waking"), stops the
	// change there as if the process died: nothing is restored or
	// completed.
	crash func(step string) bool
}

func (o Options) withDefaults() Options {
	if o.Method == "" {
		o.Method = Auto
	}
	if o.HistoryBucket == "" {
		o.HistoryBucket = HistoryBucket
	}
	if o.Seek == nil {
		o.Seek = DefaultSeek
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.inPlace == nil {
		o.inPlace = resetConsumer
	}
	if o.IntentBucket == "" {
		o.IntentBucket = IntentBucket
	}
	if o.Settle <= 0 {
		o.Settle = 30 * time.Second
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 30 * time.Second
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	o.User, o.Host = jsutil.Who(o.User, o.Host)
	return o
}
