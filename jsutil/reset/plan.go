package reset

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go/jetstream"
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
)

// Options tune planning and execution. The zero value is usable.
type Options struct {
	// Method forces a method; "" or Auto picks one per consumer.
	Method Method
	// Force allows refused changes: busy consumers and forward moves that
	// can remove messages from interest or work-queue streams.
	Force bool
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

	// beforeCreate, when set, runs after a recreate deleted the consumer
	// and before it creates it again (tests inject failures here).
	beforeCreate func() error
	// inPlace, when set, replaces the call to the server's reset API
	// (tests simulate servers without it).
	inPlace func(ctx context.Context, js jetstream.JetStream, stream, consumer string, seq uint64) error
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
		o.inPlace = resetInPlace
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.User == "" {
		if u, err := user.Current(); err == nil {
			o.User = u.Username
		}
	}
	if o.Host == "" {
		o.Host, _ = os.Hostname()
	}
	return o
}

// Plan is the set of changes for one stream.
type Plan struct {
	Created  time.Time `json:"created"`
	Stream   string    `json:"stream"`
	Target   Target    `json:"target"`
	Executed bool      `json:"executed"`
	Changes  []*Change `json:"changes"`
	// Skipped lists the ephemeral consumers --all left alone.
	Skipped []string `json:"skipped,omitempty"`
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
	Redeliver uint64 `json:"redeliver"`
	Skip      uint64 `json:"skip"`
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

	refusal error
	state   *consumerState
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

// Err returns the refusal of the plan's first refused change (wrapping
// jsutil.ErrConflict), or nil when every change may be made.
func (p *Plan) Err() error {
	var first error
	n := 0
	for _, c := range p.Changes {
		if c.refusal == nil && c.Refused != "" {
			c.refusal = jsutil.Errorf(jsutil.ErrConflict, "reset consumer %q on %q: %s", c.Consumer, c.Stream, c.Refused)
		}
		if c.refusal != nil {
			if first == nil {
				first = c.refusal
			}
			n++
		}
	}
	if n > 1 {
		return fmt.Errorf("%w (and %d more consumers refused)", first, n-1)
	}
	return first
}

// planner holds what planning one stream's consumers shares.
type planner struct {
	js     jetstream.JetStream
	opts   Options
	stream jetstream.Stream
	info   *jetstream.StreamInfo
	counts map[string]uint64
	times  map[uint64]*time.Time

	acks       *acks.Store
	acksOpened bool
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
	return &planner{js: js, opts: opts, stream: s, info: info, counts: map[string]uint64{}, times: map[uint64]*time.Time{}}, nil
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
	p, err := newPlanner(ctx, js, stream, opts)
	if err != nil {
		return nil, jsutil.Wrap(err, "reset consumers on %q", stream)
	}
	plan := &Plan{Created: opts.Now().UTC(), Stream: stream, Target: target, Changes: []*Change{}, Skipped: []string{}}
	if all {
		// Durable consumers only: ephemeral ones (ordered consumers,
		// other tools' temporary consumers) belong to a running client.
		list := p.stream.ListConsumers(ctx)
		for ci := range list.Info() {
			if ci.Config.Durable == "" {
				plan.Skipped = append(plan.Skipped, ci.Name)
				continue
			}
			consumers = append(consumers, ci.Name)
		}
		if err := list.Err(); err != nil {
			return nil, jsutil.Wrap(err, "list consumers of %q", stream)
		}
		slices.Sort(consumers)
		slices.Sort(plan.Skipped)
	}
	for _, name := range consumers {
		c, err := p.planOne(ctx, name, target)
		if err != nil {
			return nil, err
		}
		plan.Changes = append(plan.Changes, c)
	}
	return plan, nil
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
		Stream: stream, Consumer: name, state: st,
		From:          From{Delivered: st.info.Delivered.Stream, AckFloor: st.info.AckFloor.Stream},
		DeliverPolicy: cfg.DeliverPolicy.String(),
		Push:          cfg.DeliverSubject != "",
		Filters:       filters(cfg),
		Warnings:      []string{},
	}
	c.From.AckFloorTime = p.msgTime(ctx, c.From.AckFloor)
	return c, nil
}

func (p *planner) planOne(ctx context.Context, name string, target Target) (*Change, error) {
	c, err := p.newChange(ctx, name)
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
	return c, nil
}

// complete fills in a change whose target sequence is known: clamping,
// method, counts, ack records and refusals.
func (p *planner) complete(ctx context.Context, c *Change, target Target, seq uint64) error {
	st := p.info.State
	lo, hi := st.FirstSeq, st.LastSeq+1
	if lo == 0 {
		lo = 1
	}
	switch {
	case seq < lo:
		c.warn("sequence %d is before the stream's first message; using %d", seq, lo)
		seq = lo
	case seq > hi:
		c.warn("sequence %d is past the stream's end; using %d (the next new message)", seq, hi)
		seq = hi
	}
	c.To.Sequence = seq
	if c.To.Time == nil {
		c.To.Time = p.msgTime(ctx, seq)
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
	if err := p.countAcks(ctx, c); err != nil {
		return err
	}
	p.checkRefusals(c)
	return nil
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
		next := int64(c.From.AckFloor) + 1 + target.Shift
		if next < 1 {
			c.warn("shift by %d goes before sequence 1", target.Shift)
			next = 1
		}
		return uint64(next), nil
	case ToEarliest:
		return st.FirstSeq, nil
	case ToLatest:
		return st.LastSeq + 1, nil
	case ToAckFloor:
		return c.From.AckFloor + 1, nil
	case ToPrevious:
		rec, err := Last(ctx, p.js, p.opts.HistoryBucket, c.Stream, c.Consumer)
		if err != nil {
			return 0, err
		}
		c.UndoOf = rec.Revision
		if rec.Method == Recreate && rec.FromStart != nil && !rec.FromStart.equal(startOf(c.state.info.Config)) {
			c.RestoreStart = rec.FromStart
		}
		return rec.From.AckFloor + 1, nil
	}
	return 0, jsutil.Errorf(jsutil.ErrBadInput, "unknown target kind %q", target.Kind)
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

// msgTime is the stored time of message seq, nil when there is none.
func (p *planner) msgTime(ctx context.Context, seq uint64) *time.Time {
	if seq == 0 || seq > p.info.State.LastSeq {
		return nil
	}
	if t, ok := p.times[seq]; ok {
		return t
	}
	var out *time.Time
	if m, err := p.stream.GetMsg(ctx, seq); err == nil {
		t := m.Time.UTC()
		out = &t
	}
	p.times[seq] = out
	return out
}

// count fills Redeliver (the messages matching the consumer's filters from
// the target up to the consumer's delivered sequence) and Skip (those after
// its ack floor and before the target).
func (p *planner) count(ctx context.Context, c *Change) error {
	seq := c.To.Sequence
	if seq <= c.From.Delivered {
		a, err := p.countFrom(ctx, c, seq)
		if err != nil {
			return err
		}
		b, err := p.countFrom(ctx, c, c.From.Delivered+1)
		if err != nil {
			return err
		}
		if a > b {
			c.Redeliver = a - b
		}
	}
	if seq > c.From.AckFloor+1 {
		a, err := p.countFrom(ctx, c, c.From.AckFloor+1)
		if err != nil {
			return err
		}
		b, err := p.countFrom(ctx, c, seq)
		if err != nil {
			return err
		}
		if a > b {
			c.Skip = a - b
		}
	}
	return nil
}

// countFrom counts the messages matching the consumer's filters at or after
// seq, by asking the server for a short-lived consumer's pending count.
// Where such a consumer cannot be made (a work-queue stream allows no
// overlapping consumers; the user may lack permission) it counts sequence
// numbers instead, an upper bound.
func (p *planner) countFrom(ctx context.Context, c *Change, seq uint64) (uint64, error) {
	last := p.info.State.LastSeq
	if seq > last {
		return 0, nil
	}
	key := fmt.Sprintf("%d|%s", seq, strings.Join(c.Filters, " "))
	if n, ok := p.counts[key]; ok {
		return n, nil
	}
	cfg := jetstream.ConsumerConfig{
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       seq,
		AckPolicy:         jetstream.AckNonePolicy,
		InactiveThreshold: time.Minute,
		MemoryStorage:     true,
		Replicas:          1,
		Metadata:          map[string]string{"jsctl": "reset plan count"},
	}
	if len(c.Filters) == 1 {
		cfg.FilterSubject = c.Filters[0]
	} else {
		cfg.FilterSubjects = c.Filters
	}
	var n uint64
	cons, err := p.stream.CreateConsumer(ctx, cfg)
	if err == nil {
		n = cons.CachedInfo().NumPending
		_ = p.stream.DeleteConsumer(ctx, cons.CachedInfo().Name)
	} else {
		if ctx.Err() != nil {
			return 0, jsutil.Wrap(err, "count messages for consumer %q on %q", c.Consumer, c.Stream)
		}
		n = last + 1 - seq
		c.warn("counted by sequence numbers (at most %d messages): %v", n, jsutil.Wrap(err, "count with a temporary consumer"))
	}
	p.counts[key] = n
	return n, nil
}

// checkRefusals records what the change may not do without --force.
func (p *planner) checkRefusals(c *Change) {
	info := c.state.info
	if p.opts.Force {
		return
	}
	if info.NumWaiting > 0 {
		c.refuse(jsutil.ErrConflict, "%d pull requests are waiting (a client is consuming); stop it or pass --force", info.NumWaiting)
	}
	if info.PushBound {
		c.refuse(jsutil.ErrConflict, "a push subscriber is bound (a client is consuming); stop it or pass --force")
	}
	ret := p.info.Config.Retention
	if ret != jetstream.LimitsPolicy && c.Skip > 0 {
		c.refuse(jsutil.ErrConflict, "moving forward skips %d messages that the %s stream can remove for good; pass --force to accept", c.Skip, retentionName(ret))
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
