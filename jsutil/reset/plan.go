package reset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"
)

// Method is how a consumer is moved.
type Method string

// Methods.
const (
	// Auto picks Reset where the server and the consumer's deliver policy
	// allow it, else Recreate.
	Auto Method = "auto"
	// Reset uses the server's consumer reset API: in place, keeping the
	// consumer's identity.
	Reset Method = "reset"
	// Recreate deletes the consumer and creates it again with the same
	// configuration and a new start position.
	Recreate Method = "recreate"
	// Create makes a consumer that does not exist from a saved
	// configuration (history, a snapshot) and moves it to the target.
	Create Method = "create"
)

// Plan is the set of changes for one stream.
type Plan struct {
	Created  time.Time `json:"created"`
	Stream   string    `json:"stream"`
	Target   Target    `json:"target"`
	Executed bool      `json:"executed"`
	Changes  []*Change `json:"changes"`
	// Skipped lists the ephemeral consumers --all left alone.
	Skipped []string `json:"skipped,omitempty"`
	// ServerOwned lists the consumers --all left alone because the server
	// made them for a mirror or a source (see jsutil.ServerOwner).
	ServerOwned []string `json:"server_owned,omitempty"`
	// Unfinished lists the stream's changes that an interrupted run left
	// unfinished (`jsctl consumer recover` finishes them).
	Unfinished []Unfinished `json:"unfinished_changes,omitempty"`
	// SkippedRecords lists the stream's intent records that could not be
	// used: reported and skipped.
	SkippedRecords []BadRecord `json:"skipped_records,omitempty"`

	// StreamCreated is when the server created the stream the plan is for
	// (nil in plans of an older jsctl): Execute refuses a stream created
	// again since.
	StreamCreated *time.Time `json:"stream_created,omitempty"`
}

// From is a consumer's position before the change.
type From struct {
	Delivered    uint64     `json:"delivered"`
	AckFloor     uint64     `json:"ack_floor"`
	AckFloorTime *time.Time `json:"ack_floor_time"`
}

// To is where the consumer's next delivery will be.
type To struct {
	Sequence uint64     `json:"sequence"`
	Time     *time.Time `json:"time"`
}

// Change is the planned (and, once executed, applied) move of one consumer.
type Change struct {
	Stream   string `json:"stream"`
	Consumer string `json:"consumer"`
	Method   Method `json:"method"`
	// Reason says why this method was chosen.
	Reason string `json:"reason"`
	From   From   `json:"from"`
	To     To     `json:"to"`
	// StartTime is set when a recreate starts the consumer by time
	// (DeliverByStartTime) rather than by sequence.
	StartTime *time.Time `json:"start_time,omitempty"`
	// Redeliver counts the messages (matching the consumer's filter) that
	// the consumer will deliver again; Skip those it will not deliver.
	// Each is nil (null) when a read it needs was refused or unanswered
	// (a warning says which): unknown, never an upper bound.
	Redeliver *uint64 `json:"redeliver"`
	Skip      *uint64 `json:"skip"`
	// NeverDelivered counts, for a target after the consumer's delivered
	// sequence, the skipped messages (within its filters) it never
	// delivered at all: a "rewind" that moves it forward past them (see
	// noteNeverDelivered). Zero otherwise; nil (null) when a count it
	// needs is unknown.
	NeverDelivered *uint64 `json:"never_delivered"`
	// Applied and Verified say whether the change was made and whether
	// consumer info then showed the next delivery at To.Sequence.
	Applied             bool     `json:"applied"`
	Verified            bool     `json:"verified"`
	AckRecordsInRange   int      `json:"ack_records_in_range"`
	AckRecordsForgotten int      `json:"ack_records_forgotten"`
	DeliverPolicy       string   `json:"deliver_policy"`
	Push                bool     `json:"push"`
	Filters             []string `json:"filter_subjects"`
	// UndoOf is the history revision a ToPrevious change undoes.
	UndoOf uint64 `json:"undo_of,omitempty"`
	// RestoreStart, when an undo follows a recreate, is the original
	// start the consumer is recreated with (then moved in place).
	RestoreStart *Start `json:"restore_start,omitempty"`
	// Refused says why the change will not be made without --force (or
	// at all).
	Refused  string   `json:"refused,omitempty"`
	Warnings []string `json:"warnings"`
	// Restored is set when a failed recreate put the consumer back.
	Restored bool   `json:"restored,omitempty"`
	Error    string `json:"error,omitempty"`
	// ChangeID identifies the executed change (its intent and history
	// records carry it).
	ChangeID string `json:"change_id,omitempty"`
	// Config is the saved configuration a Create change makes the
	// consumer from.
	Config json.RawMessage `json:"config,omitempty"`
	// DeliveredSince counts the messages the consumer delivered between
	// the verified change and a last look at its info (a live client).
	DeliveredSince uint64 `json:"delivered_since,omitempty"`
	// Source is the consumer whose position a ToConsumer target copies.
	Source *Source `json:"source,omitempty"`
	// Pause is what the change does about pausing (Options.Pause).
	Pause *PauseStep `json:"pause,omitempty"`
	// Exhausted is what is known of the messages that had used up
	// MaxDeliver, which the change makes deliverable again (see
	// noteExhausted); nil when there can be none.
	Exhausted *Exhausted `json:"max_deliver_exhausted,omitempty"`
	// Priority is the consumer's priority groups and pinned clients.
	Priority *Priority `json:"priority,omitempty"`
	// Messages lists, with Options.ShowMessages, the first and last of the
	// messages the change redelivers (or, moving forward, skips) within
	// the consumer's filters (see listMessages); MessagesTotal counts them.
	Messages      []Message `json:"messages,omitzero"`
	MessagesTotal *uint64   `json:"messages_total,omitempty"`
	MessagesKind  string    `json:"messages_kind,omitempty"`

	refusal error
	state   *consumerState
	// proof is the server's reply to the change (create or reset, or
	// consumer info where the reply was lost), proofKind names it, and
	// resetSeq is an in-place reset reply's reset_seq.
	proof     *consumerState
	proofKind string
	resetSeq  uint64
	// countsBound says Redeliver, Skip and NeverDelivered are upper
	// bounds (counted by sequence numbers, see countFrom).
	countsBound bool
	// unsure marks a change that may follow a server crash (see
	// confirmCreate).
	unsure bool
	// pauseSent says a pause request was sent for the change.
	pauseSent bool
	// intent is the change's intent record once written (see noteCreating).
	intent *Intent

	// Created is when the server created the consumer the plan found
	// (nil for a consumer the change creates): Execute refuses one
	// created again since.
	Created *time.Time `json:"created,omitempty"`
	// ConfigDiff is a Create change's saved configuration against the
	// server's defaults, or a saved configuration against the consumer's
	// own (see DiffConfig).
	ConfigDiff []ConfigField `json:"config_diff,omitempty"`
	// ByTime says the target was found by a saved time rather than the
	// saved sequence (Options.ByTime).
	ByTime bool `json:"by_time,omitempty"`
}

func (c *Change) warn(format string, args ...any) {
	c.Warnings = append(c.Warnings, fmt.Sprintf(format, args...))
}

func (c *Change) refuse(class error, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if c.Refused != "" {
		c.Refused += "; "
	}
	c.Refused += msg
	if c.refusal == nil {
		c.refusal = jsutil.Errorf(class, "reset consumer %q on %q: %s", c.Consumer, c.Stream, msg)
	}
}

// refuseWith refuses the change for err (a *jsutil.Recreated: the stream
// or consumer recorded is another now), followed by then: the refusal
// wraps err, so it is jsutil.ErrRecreated and jsutil.ErrConflict.
func (c *Change) refuseWith(err error, then string) {
	if c.Refused != "" {
		c.Refused += "; "
	}
	c.Refused += err.Error() + then
	if c.refusal == nil {
		c.refusal = jsutil.Errorf(jsutil.ErrConflict, "reset consumer %q on %q: %w%s", c.Consumer, c.Stream, err, then)
	}
}

// Err returns the refusal of the plan's first refused change (wrapping
// jsutil.ErrConflict), or nil when every change may be made.
func (p *Plan) Err() error { return PlansErr([]*Plan{p}) }

// planner holds what planning one stream's consumers shares. Its caches
// are safe for the concurrent planning of several consumers.
type planner struct {
	js      jetstream.JetStream
	opts    Options
	stream  jetstream.Stream
	info    *jetstream.StreamInfo
	intents *intents

	mu     sync.Mutex
	counts map[string]*uint64 // nil: unknown
	times  map[uint64]*time.Time
	// msgs reads message times; timeErrs holds why a time is unknown.
	msgs     *jsutil.StreamMsgs
	timeErrs map[uint64]error

	acksOnce sync.Once
	acks     *acks.Store
	acksErr  error
	history  jetstream.KeyValue

	// src is the consumer a ToConsumer target copies (read once).
	srcOnce sync.Once
	src     *consumerState
	srcErr  error
}

// newPlanner loads stream. Its errors are the raw ones: each caller says
// what it was doing.
func newPlanner(ctx context.Context, js jetstream.JetStream, stream string, opts Options) (*planner, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, err
	}
	return &planner{
		js: js, opts: opts, stream: s, info: info, counts: map[string]*uint64{}, times: map[uint64]*time.Time{},
		msgs:    jsutil.NewStreamMsgs(js, stream, info.Config.AllowDirect, opts.Timeout),
		intents: &intents{js: js, bucket: opts.IntentBucket, replicas: info.Config.Replicas, settle: opts.Settle, timeout: opts.Timeout, info: info},
	}, nil
}

// each runs fn for i in 0..n-1, at most Options.Concurrency at once, and
// reports progress. It returns the error of the lowest i that failed.
func (p *planner) each(ctx context.Context, n int, fn func(i int) error) error {
	errs := make([]error, n)
	var g errgroup.Group
	g.SetLimit(p.opts.Concurrency)
	t := jsutil.NewTally(p.opts.Progress, n)
	t.Start()
	for i := 0; i < n; i++ {
		if ctx.Err() != nil {
			errs[i] = ctx.Err()
			break
		}
		g.Go(func() error {
			errs[i] = fn(i)
			t.Step()
			return nil
		})
	}
	_ = g.Wait() // errors are in errs
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// unfinished reads the stream's unfinished changes.
func (p *planner) unfinished(ctx context.Context) ([]*Intent, []BadRecord, error) {
	return p.intents.list(ctx, p.info.Config.Name, nil)
}

// noteUnfinished lists the unfinished changes in the plan. When they could
// not be read (the user may not read the bucket), each change says so: the
// plan is still made, and executing it needs the bucket anyway.
func (plan *Plan) noteUnfinished(pending []*Intent, bad []BadRecord, err error) {
	for _, in := range pending {
		plan.Unfinished = append(plan.Unfinished, in.unfinished())
	}
	if len(bad) > 0 {
		plan.SkippedRecords = bad
	}
	if err == nil {
		return
	}
	for _, c := range plan.Changes {
		if c != nil {
			c.warn("could not check for unfinished changes: %v", err)
		}
	}
}

// NewPlan plans moving consumers of stream to target: the named consumers,
// or all of the stream's consumers when all is set. Nothing changes on the
// server. Refusals are recorded in the changes; Plan.Err reports them.
func NewPlan(ctx context.Context, js jetstream.JetStream, stream string, consumers []string, all bool, target Target, opts Options) (*Plan, error) {
	opts = opts.withDefaults()
	if err := target.Validate(); err != nil {
		return nil, err
	}
	if target.Kind == ByDuration {
		target = Target{Kind: ToTime, Time: opts.Now().Add(-target.Duration), Mode: ModeAfter, Duration: target.Duration}
	}
	if all == (len(consumers) > 0) {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "name consumers or pass --all, not both or neither")
	}
	consumers = jsutil.Unique(consumers)
	if target.Kind == ToConsumer && slices.Contains(consumers, target.Consumer) {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "reset consumer %q on %q: it cannot take its position from itself", target.Consumer, stream)
	}
	p, err := newPlanner(ctx, js, stream, opts)
	if err != nil {
		return nil, jsutil.Wrap(err, "reset consumers on %q", stream)
	}
	plan := &Plan{Created: opts.Now().UTC(), Stream: stream, Target: target, Changes: []*Change{}, Skipped: []string{}}
	plan.StreamCreated = p.streamCreated()
	if all {
		// Durable consumers only: ephemeral ones (ordered consumers,
		// other tools' temporary consumers) belong to a running client.
		list := p.stream.ListConsumers(ctx)
		for ci := range list.Info() {
			if ci.Config.Durable == "" {
				plan.Skipped = append(plan.Skipped, ci.Name)
				continue
			}
			if jsutil.ServerOwner(ci.Name, ci.Config.Metadata) != "" {
				plan.ServerOwned = append(plan.ServerOwned, ci.Name)
				continue
			}
			if target.Kind == ToConsumer && ci.Name == target.Consumer {
				continue // the source stays where it is
			}
			consumers = append(consumers, ci.Name)
		}
		if err := list.Err(); err != nil {
			return nil, jsutil.Wrap(err, "list consumers of %q", stream)
		}
		slices.Sort(consumers)
		slices.Sort(plan.Skipped)
	}
	// The intent records are read while the consumers are planned.
	var pending []*Intent
	var bad []BadRecord
	var pendingErr error
	var reading errgroup.Group
	reading.Go(func() error {
		pending, bad, pendingErr = p.unfinished(ctx)
		return nil
	})
	plan.Changes = make([]*Change, len(consumers))
	errs := make([]error, len(consumers))
	eachErr := p.each(ctx, len(consumers), func(i int) error {
		plan.Changes[i], errs[i] = p.planOne(ctx, consumers[i], target)
		return nil
	})
	_ = reading.Wait() // its error is pendingErr
	if eachErr != nil {
		// Cancelled before every consumer was planned.
		return nil, jsutil.Wrap(eachErr, "reset consumers on %q", stream)
	}
	for i, name := range consumers {
		c := plan.Changes[i]
		if in := intentOf(pending, name); in != nil && (errors.Is(errs[i], jsutil.ErrNotFound) || c != nil && c.Method == Create) {
			// Deleted by an interrupted change: recover it first.
			c = &Change{Stream: stream, Consumer: name, Method: Create, Reason: "the consumer does not exist", Filters: []string{}, Warnings: []string{}}
			errs[i] = nil
		}
		if errs[i] != nil {
			return nil, errs[i]
		}
		refuseUnfinished(c, pending)
		plan.Changes[i] = c
	}
	plan.noteUnfinished(pending, bad, pendingErr)
	return plan, nil
}

func intentOf(pending []*Intent, consumer string) *Intent {
	for _, in := range pending {
		if in.Consumer == consumer {
			return in
		}
	}
	return nil
}

// refuseUnfinished refuses a change of a consumer that has an unfinished
// change (not even --force moves it: recover first).
func refuseUnfinished(c *Change, pending []*Intent) {
	for _, in := range pending {
		if in.Consumer == c.Consumer {
			c.refuse(jsutil.ErrConflict, "an earlier change (%s %s, started %s by %s@%s) is unfinished; finish it first with: %s",
				in.Method, esc(in.ID), in.Time.UTC().Format(time.RFC3339), esc(in.User), esc(in.Host), RecoverCommand(in.Stream, in.Consumer))
		}
	}
}

// newChange reads a consumer and starts its change.
func (p *planner) newChange(ctx context.Context, name string) (*Change, error) {
	stream := p.info.Config.Name
	st, err := loadConsumer(ctx, p.js, stream, name)
	if err != nil {
		return nil, wrapConsumer(err, stream, name)
	}
	cfg := st.info.Config
	c := &Change{
		Stream: stream, Consumer: name, state: st, Created: st.createdAt(),
		From:          From{Delivered: st.info.Delivered.Stream, AckFloor: st.info.AckFloor.Stream},
		DeliverPolicy: cfg.DeliverPolicy.String(),
		Push:          cfg.DeliverSubject != "",
		Filters:       filters(cfg),
		Warnings:      []string{},
	}
	p.timeOf(ctx, c, &c.From.AckFloorTime, c.From.AckFloor, "ack floor")
	return c, nil
}

// timeOf sets *t to the stored time of message seq, warning in c when it
// is unknown (a refused or unanswered read: null, never a guess).
func (p *planner) timeOf(ctx context.Context, c *Change, t **time.Time, seq uint64, what string) {
	var err error
	if *t, err = p.msgTimeErr(ctx, seq); err != nil {
		c.warn("the time of the %s (sequence %d) is unknown: %v", what, seq, err)
	}
}

func (p *planner) planOne(ctx context.Context, name string, target Target) (*Change, error) {
	c, err := p.newChange(ctx, name)
	if errors.Is(err, jsutil.ErrNotFound) && target.Kind == ToPrevious {
		// Deleted: --to-previous rebuilds it from the configuration its
		// last history record keeps.
		return p.planRebuild(ctx, name)
	}
	if err != nil {
		return nil, err
	}
	seq, err := p.resolve(ctx, c, target)
	if err != nil {
		return nil, err
	}
	if err := p.complete(ctx, c, target, seq); err != nil {
		return nil, err
	}
	p.refuseServerOwned(c)
	noteExhausted(c)
	return c, nil
}

// complete fills in a change whose target sequence is known: clamping,
// method, counts, ack records and refusals.
func (p *planner) complete(ctx context.Context, c *Change, target Target, seq uint64) error {
	c.To.Sequence = p.clamp(c, seq)
	if c.To.Time == nil {
		p.timeOf(ctx, c, &c.To.Time, c.To.Sequence, "target")
	}
	if (target.Kind == ToTime) && target.mode() == ModeAfter {
		t := target.Time.UTC()
		c.StartTime = &t
	}
	if err := p.chooseMethod(ctx, c); err != nil {
		return err
	}
	if err := p.count(ctx, c); err != nil {
		return err
	}
	if err := p.noteNeverDelivered(ctx, c, target); err != nil {
		return err
	}
	if err := p.countAcks(ctx, c); err != nil {
		return err
	}
	if err := p.listMessages(ctx, c); err != nil {
		return err
	}
	if c.Source != nil {
		if err := p.compareSource(ctx, c); err != nil {
			return err
		}
	}
	p.checkRefusals(c)
	return nil
}

// clamp keeps a target within the stream: first..last+1, with a warning.
func (p *planner) clamp(c *Change, seq uint64) uint64 {
	st := p.info.State
	lo, hi := st.FirstSeq, st.LastSeq+1
	if lo == 0 {
		lo = 1
	}
	switch {
	case seq < lo:
		c.warn("sequence %d is before the stream's first message; using %d", seq, lo)
		return lo
	case seq > hi:
		c.warn("sequence %d is past the stream's end; using %d (the next new message)", seq, hi)
		return hi
	}
	return seq
}

// resolve finds the target sequence for one consumer.
func (p *planner) resolve(ctx context.Context, c *Change, target Target) (uint64, error) {
	st := p.info.State
	switch target.Kind {
	case ToTime:
		subject := ""
		if len(c.Filters) == 1 {
			subject = c.Filters[0]
		} else if len(c.Filters) > 1 && target.mode() != ModeAfter {
			c.warn("the consumer has several filter subjects; %s is found among all subjects", target.mode())
		}
		seq, mt, err := p.opts.Seek(ctx, p.js, c.Stream, target.Time, target.mode(), subject)
		if err != nil {
			return 0, wrapConsumer(err, c.Stream, c.Consumer)
		}
		if !mt.IsZero() {
			t := mt.UTC()
			c.To.Time = &t
		}
		return seq, nil
	case ToSeq:
		return target.Seq, nil
	case ShiftBy:
		return shift(c, c.From.AckFloor+1, target.Shift), nil
	case ToEarliest:
		return st.FirstSeq, nil
	case ToLatest:
		return st.LastSeq + 1, nil
	case ToAckFloor:
		return c.From.AckFloor + 1, nil
	case ToConsumer:
		return p.resolveSource(ctx, c, target)
	case ToPrevious:
		rec, err := Last(ctx, p.js, p.opts.HistoryBucket, c.Stream, c.Consumer)
		if err != nil {
			return 0, err
		}
		c.UndoOf = rec.Revision
		p.checkHistory(c, rec, c.state)
		if rec.Method == Create {
			// It did not exist before: there is no position to go back
			// to, and sequence 1 would replay the whole stream.
			c.refuse(jsutil.ErrConflict, "its last recorded change (history revision %d) created it, so it has no earlier position to go back to; to undo the create, delete the consumer; to move it, give another target (--to-seq, --to-time, --to-ack-floor)", rec.Revision)
			return c.From.AckFloor + 1, nil
		}
		if rec.Method == Recreate && rec.FromStart != nil && !rec.FromStart.equal(startOf(c.state.info.Config)) {
			c.RestoreStart = rec.FromStart
		}
		return rec.From.AckFloor + 1, nil
	}
	return 0, jsutil.Errorf(jsutil.ErrBadInput, "unknown target kind %q", target.Kind)
}

// shift is next moved by n sequences without overflow: a shift before
// sequence 1 lands on 1 (with a warning), one past the largest sequence on
// the largest (clamp then keeps it within the stream).
func shift(c *Change, next uint64, n int64) uint64 {
	if n >= 0 {
		if uint64(n) > math.MaxUint64-next {
			return math.MaxUint64
		}
		return next + uint64(n)
	}
	back := uint64(-(n + 1)) + 1 // -n without overflowing math.MinInt64
	if back >= next {
		c.warn("shift by %d goes before sequence 1", n)
		return 1
	}
	return next - back
}

func filters(cfg jetstream.ConsumerConfig) []string {
	if cfg.FilterSubject != "" {
		return []string{cfg.FilterSubject}
	}
	if cfg.FilterSubjects == nil {
		return []string{}
	}
	return cfg.FilterSubjects
}

// checkRefusals records what the change may not do without --force, and
// the pause step of a change made with Options.Pause (which then needs no
// --force for a busy consumer).
func (p *planner) checkRefusals(c *Change) {
	info := c.state.info
	if p.opts.Pause {
		if v, old := jsutil.ServerBefore(p.js, jsutil.PauseAPISince); old {
			c.refuse(jsutil.ErrBadInput, "--pause needs the consumer pause API, which the server (nats-server %s) lacks (nats-server %s or later): stop the consumer's clients and run it without --pause", v, jsutil.PauseAPISince)
		} else {
			c.Pause = p.pausePlan(c.state)
			warnWaiting(c)
		}
	}
	c.Priority = priorityOf(c.state, p.opts.Unpin)
	if p.opts.Force {
		return
	}
	if info.NumWaiting > 0 && !p.opts.Pause {
		waiting := fmt.Sprintf("%d pull requests are waiting", info.NumWaiting)
		if info.NumWaiting == 1 {
			waiting = "1 pull request is waiting"
		}
		c.refuse(jsutil.ErrConflict, "%s (a client is consuming); stop it, or pass --pause to pause it during the change (or --force)", waiting)
	}
	if info.PushBound && !p.opts.Pause {
		c.refuse(jsutil.ErrConflict, "a push subscriber is bound (a client is consuming); stop it, or pass --pause to pause it during the change (or --force)")
	}
	if s := c.Source; s != nil && s.UncoveredUnknown {
		c.refuse(jsutil.ErrConflict, "copying the %s of %q may skip messages that this consumer's filter takes and %q's does not, and their count is unknown; pass --force to accept", positionWords(s.Position), s.Consumer, s.Consumer)
	}
	if s := c.Source; s != nil && s.Uncovered > 0 {
		c.refuse(jsutil.ErrConflict, "copying the %s of %q skips %d messages that this consumer's filter takes and %q's does not (neither consumer has handled them); pass --force to accept", positionWords(s.Position), s.Consumer, s.Uncovered, s.Consumer)
	}
	ret := p.info.Config.Retention
	if ret != jetstream.LimitsPolicy && c.Skip != nil && *c.Skip > 0 {
		c.refuse(jsutil.ErrConflict, "moving forward skips %d messages that the %s stream can remove for good; pass --force to accept", *c.Skip, retentionName(ret))
	}
	if ret != jetstream.LimitsPolicy && c.Skip == nil && c.To.Sequence > c.From.AckFloor+1 {
		c.refuse(jsutil.ErrConflict, "moving forward may skip messages that the %s stream can remove for good, and their count is unknown; pass --force to accept", retentionName(ret))
	}
}

func retentionName(r jetstream.RetentionPolicy) string {
	switch r {
	case jetstream.InterestPolicy:
		return "interest"
	case jetstream.WorkQueuePolicy:
		return "work-queue"
	}
	return "limits"
}
