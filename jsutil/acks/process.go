package acks

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Processing defaults.
const (
	// DefaultKeyHeader is the header whose value is the dedup key.
	DefaultKeyHeader = nats.MsgIdHdr
	// DefaultLease is how long a claim lasts without renewal.
	DefaultLease = 30 * time.Second
)

// ErrLeaseLost marks a handler whose claim ran out or was taken over while
// it ran: its context is cancelled and the message is neither acked nor
// marked done. It is a jsutil.ErrConflict.
var ErrLeaseLost = errors.New("lease lost")

// Action is what Process did with a message.
type Action string

// Actions.
const (
	// Processed: the handler ran and succeeded; the record is done and the
	// message acked.
	Processed Action = "processed"
	// Duplicate: a done record (or the scope's floor) shows the message was
	// handled before; it was acked without running the handler.
	Duplicate Action = "duplicate"
	// Failed: the handler failed (or the lease was lost, or the record could
	// not be read or written); the claim was released and the message will
	// be redelivered.
	Failed Action = "failed"
	// Busy: another live worker holds the claim; the message was nak'd with
	// a delay without running the handler.
	Busy Action = "busy"
)

// Delivery is what a handler gets besides the message.
type Delivery struct {
	Msg        jetstream.Msg
	Stream     string
	Consumer   string
	Subject    string
	Seq        uint64 // stream sequence
	Time       time.Time
	Deliveries uint64
	Scope      string
	Key        string // the dedup key (header value or sequence)
	KeyFrom    KeyKind
	// Fence is the claim's KV revision: a fencing token that grows with
	// every new claim of any key in the bucket. Downstream systems can
	// refuse writes carrying a lower token than one already seen. It is 0
	// for messages processed without a record.
	Fence uint64
	// Idempotent is false for messages outside the idempotent subjects,
	// processed at least once without a record.
	Idempotent bool
}

// Handler processes one message. A nil error marks it done; an error has it
// redelivered later. The context is cancelled when the lease is lost.
type Handler func(ctx context.Context, d Delivery) error

// Result says what happened to one message.
type Result struct {
	Action     Action        `json:"action"`
	Stream     string        `json:"stream"`
	Consumer   string        `json:"consumer"`
	Seq        uint64        `json:"seq"`
	Subject    string        `json:"subject"`
	Time       time.Time     `json:"time"`
	Deliveries uint64        `json:"deliveries"`
	Scope      string        `json:"scope,omitempty"`
	Key        string        `json:"key"`
	KeyFrom    KeyKind       `json:"key_from,omitempty"`
	Idempotent bool          `json:"idempotent"`
	Fence      uint64        `json:"fence,omitempty"`
	Duration   time.Duration `json:"-"`
	// Mismatch: the payload's hash differs from the one in the done record
	// under the same key (a different message reusing the key).
	Mismatch bool `json:"mismatch,omitempty"`
	// RecordSeq is the stream sequence the matching done record was made
	// for (for duplicates).
	RecordSeq uint64 `json:"record_seq,omitempty"`
	// BelowFloor: a duplicate found by the scope's floor (its record was
	// compacted).
	BelowFloor bool `json:"below_floor,omitempty"`
	// LeaseLost: the claim was lost while the handler ran.
	LeaseLost bool `json:"lease_lost,omitempty"`
	// Err is why the message failed (or a failed acknowledgment).
	Err error `json:"-"`
}

// ProcessOption configures Process (and Consume).
type ProcessOption interface {
	ConsumeOption
	applyProcess(*processConfig)
}

type processConfig struct {
	scope      string
	keyHeader  string
	subjects   []string
	lease      time.Duration
	busyDelay  time.Duration
	retryDelay time.Duration
	maxDeliver int
}

type processOpt func(*processConfig)

func (f processOpt) applyProcess(c *processConfig) { f(c) }
func (f processOpt) applyConsume(c *consumeConfig) { f(&c.processConfig) }

// WithScope sets the records' scope (default DefaultScope of the message's
// stream and consumer). Consumers that share a scope share their records.
func WithScope(scope string) ProcessOption {
	return processOpt(func(c *processConfig) { c.scope = scope })
}

// WithKeyHeader sets the header whose value is the dedup key (default
// Nats-Msg-Id); a message without it is keyed by its stream sequence.
func WithKeyHeader(h string) ProcessOption {
	return processOpt(func(c *processConfig) { c.keyHeader = h })
}

// WithIdempotentSubjects limits records to messages on subjects matching
// any of the patterns (NATS wildcards); others are processed at least once
// without a record. Default: all subjects.
func WithIdempotentSubjects(patterns ...string) ProcessOption {
	return processOpt(func(c *processConfig) { c.subjects = append(c.subjects, patterns...) })
}

// WithLease sets how long a claim lasts without renewal (default
// DefaultLease; at least 1s, whole seconds, as the server counts TTLs). The
// lease is renewed every third of it while the handler runs.
func WithLease(d time.Duration) ProcessOption {
	return processOpt(func(c *processConfig) { c.lease = d })
}

// WithBusyDelay sets the nak delay for a message whose claim another worker
// holds (default: until that claim's lease would run out).
func WithBusyDelay(d time.Duration) ProcessOption {
	return processOpt(func(c *processConfig) { c.busyDelay = d })
}

// WithRetryDelay sets the nak delay after a failed handler (default 0: nak
// at once).
func WithRetryDelay(d time.Duration) ProcessOption {
	return processOpt(func(c *processConfig) { c.retryDelay = d })
}

// WithMaxDeliver tells Process the consumer's MaxDeliver: a handler that
// fails on the last allowed delivery leaves a failed record instead of
// releasing the claim, so the scope's floor never counts it as done.
// Consume sets it from the consumer.
func WithMaxDeliver(n int) ProcessOption {
	return processOpt(func(c *processConfig) { c.maxDeliver = n })
}

func (c *processConfig) check() error {
	if c.keyHeader == "" {
		c.keyHeader = DefaultKeyHeader
	}
	if c.lease == 0 {
		c.lease = DefaultLease
	}
	if c.lease < time.Second || c.lease%time.Second != 0 {
		return jsutil.Errorf(jsutil.ErrBadInput, "lease %v: want whole seconds, at least 1s (the server counts TTLs in seconds)", c.lease)
	}
	for _, p := range c.subjects {
		if !validPattern(p) {
			return jsutil.Errorf(jsutil.ErrBadInput, "bad idempotent subject pattern %q", p)
		}
	}
	if c.scope != "" {
		return CheckScope(c.scope)
	}
	return nil
}

// Process handles one message: it runs handler at most once per dedup key
// (see the package documentation), then acks or naks the message as the
// result says. Consume also keeps the scope's floor; callers of Process
// alone may call AdvanceFloor with their consumer's ack floor. The returned error is nil for processed, duplicate
// and busy messages, and says why otherwise (it is also Result.Err).
func (s *Store) Process(ctx context.Context, msg jetstream.Msg, handler Handler, opts ...ProcessOption) (Result, error) {
	var c processConfig
	for _, o := range opts {
		o.applyProcess(&c)
	}
	if err := c.check(); err != nil {
		return Result{Action: Failed, Err: err}, err
	}
	return s.process(ctx, msg, handler, &c)
}

func (s *Store) process(ctx context.Context, msg jetstream.Msg, handler Handler, c *processConfig) (Result, error) {
	start := time.Now()
	res, err := s.processOne(ctx, msg, handler, c)
	res.Duration = time.Since(start)
	return res, err
}

func (s *Store) processOne(ctx context.Context, msg jetstream.Msg, handler Handler, c *processConfig) (Result, error) {
	meta, err := msg.Metadata()
	if err != nil {
		err = jsutil.Errorf(jsutil.ErrBadInput, "message on %q is not a jetstream message: %w", msg.Subject(), err)
		return Result{Action: Failed, Subject: msg.Subject(), Err: err}, err
	}
	d := Delivery{
		Msg: msg, Stream: meta.Stream, Consumer: meta.Consumer, Subject: msg.Subject(),
		Seq: meta.Sequence.Stream, Time: meta.Timestamp, Deliveries: meta.NumDelivered,
		Scope: c.scope, Idempotent: matchAny(c.subjects, msg.Subject()),
	}
	if d.Scope == "" {
		d.Scope = DefaultScope(meta.Stream, meta.Consumer)
	}
	d.KeyFrom, d.Key = KeyFromSequence, strconv.FormatUint(d.Seq, 10)
	if v := msg.Headers().Get(c.keyHeader); v != "" {
		d.KeyFrom, d.Key = KeyFromHeader, v
	}
	res := Result{
		Stream: d.Stream, Consumer: d.Consumer, Seq: d.Seq, Subject: d.Subject, Time: d.Time,
		Deliveries: d.Deliveries, Scope: d.Scope, Key: d.Key, KeyFrom: d.KeyFrom, Idempotent: d.Idempotent,
	}
	// Writes after the handler (done, release, ack) must happen even when
	// ctx is cancelled, so no claim is left behind; each gets its own
	// deadline, started when it is needed.
	var cancels []context.CancelFunc
	defer func() {
		for _, f := range cancels {
			f()
		}
	}()
	after := func() context.Context {
		actx, f := context.WithTimeout(context.WithoutCancel(ctx), c.lease)
		cancels = append(cancels, f)
		return actx
	}

	if !d.Idempotent {
		if err := handler(ctx, d); err != nil {
			res.Action, res.Err = Failed, err
			s.nak(msg, c.retryDelay)
			return res, err
		}
		res.Action = Processed
		res.Err = ackErr(msg.DoubleAck(after()), d)
		return res, res.Err
	}

	kvKey := recordKey(d.Scope, d.KeyFrom, d.Key)
	hash := PayloadHash(msg.Data())
	cl, dup, err := s.claim(ctx, kvKey, hash, d, c)
	switch {
	case err != nil:
		res.Action, res.Err = Failed, err
		s.nak(msg, s.busyDelay(c, time.Time{}))
		return res, err
	case dup != nil && dup.State == StateClaim:
		res.Action = Busy
		s.nak(msg, s.busyDelay(c, dup.LeaseExpires))
		return res, nil
	case dup != nil:
		res.Action, res.RecordSeq = Duplicate, dup.Seq
		res.Mismatch = dup.Hash != hash
		res.Err = ackErr(msg.DoubleAck(after()), d)
		return res, res.Err
	}
	d.Fence, res.Fence = cl.fence, cl.fence

	// A message at or below the scope's floor with no record was done
	// before and its record compacted.
	var floor uint64
	if !cl.tookOver {
		floor, _, err = s.Floor(ctx, d.Scope)
	}
	if err != nil || (!cl.tookOver && d.Seq <= floor) {
		_ = s.purge(after(), kvKey, cl.rev)
		if err != nil {
			res.Action, res.Err = Failed, err
			s.nak(msg, c.retryDelay)
			return res, err
		}
		res.Action, res.BelowFloor = Duplicate, true
		res.Err = ackErr(msg.DoubleAck(after()), d)
		return res, res.Err
	}

	herr, rev, lost := s.runLeased(ctx, cl, kvKey, d, handler, c)
	if lost {
		res.Action, res.LeaseLost = Failed, true
		res.Err = jsutil.Classify(jsutil.ErrConflict, fmt.Errorf("ack record %q: %w", kvKey, ErrLeaseLost))
		s.nak(msg, s.busyDelay(c, time.Time{}))
		return res, res.Err
	}
	if herr != nil {
		res.Action, res.Err = Failed, herr
		if c.maxDeliver > 0 && d.Deliveries >= uint64(c.maxDeliver) {
			v := value{State: StateFailed, Seq: d.Seq, Hash: hash, Worker: s.worker, Fence: cl.fence, Deliveries: d.Deliveries, Key: keepKey(d)}
			_, _ = s.publish(after(), kvKey, v.encode(), rev, 0)
		} else {
			_ = s.purge(after(), kvKey, rev) // on failure the lease runs out instead
		}
		s.nak(msg, c.retryDelay)
		return res, herr
	}
	actx := after()
	if err := s.markDone(actx, kvKey, rev, hash, cl.fence, d); err != nil {
		res.Action, res.Err = Failed, err
		res.LeaseLost = errors.Is(err, ErrLeaseLost)
		s.nak(msg, s.busyDelay(c, time.Time{}))
		return res, err
	}
	res.Action = Processed
	res.Err = ackErr(msg.DoubleAck(actx), d)
	return res, res.Err
}

// keepKey is the dedup key to store in the record's value: only when the
// record key holds a hash of it.
func keepKey(d Delivery) string {
	if hashedKey(d.KeyFrom, d.Key) {
		return d.Key
	}
	return ""
}

func ackErr(err error, d Delivery) error {
	if err == nil {
		return nil
	}
	return jsutil.Wrap(err, "ack message %d of stream %q", d.Seq, d.Stream)
}

func (s *Store) nak(msg jetstream.Msg, delay time.Duration) {
	if delay > 0 {
		_ = msg.NakWithDelay(delay)
		return
	}
	_ = msg.Nak()
}

// busyDelay is how long to defer a message whose claim is held elsewhere:
// until that lease would run out (so a dead worker's claim has expired by
// then), bounded by the lease.
func (s *Store) busyDelay(c *processConfig, expires time.Time) time.Duration {
	if c.busyDelay > 0 {
		return c.busyDelay
	}
	d := c.lease / 4
	if !expires.IsZero() {
		d = time.Until(expires) + 250*time.Millisecond
	}
	return min(max(d, 250*time.Millisecond), c.lease)
}

type claimed struct {
	rev      uint64 // current revision (changes with each renewal)
	fence    uint64 // revision of the claim itself
	tookOver bool   // the key held a failed record (so the floor does not apply)
}

// claim takes the record of kvKey for this message. It returns the claim,
// or the existing record when another claim or a done record is there.
//
// A claim is created with kv.Create and a per-key TTL (the lease). Create
// succeeds only when the key has no value: never written, released (purge
// marker), or its lease ran out on the server (the TTL removed the claim
// and left a MaxAge limit marker) — that is how a dead worker's claim
// expires. A failed record (the handler failed on a last delivery) is taken
// over by a compare-and-set on its revision.
func (s *Store) claim(ctx context.Context, kvKey, hash string, d Delivery, c *processConfig) (claimed, *Record, error) {
	for attempt := 0; attempt < 5; attempt++ {
		v := value{State: StateClaim, Seq: d.Seq, Hash: hash, Worker: s.worker, Deliveries: d.Deliveries, Expires: time.Now().Add(c.lease).UnixNano(), Key: keepKey(d)}
		rev, err := s.kv.Create(ctx, kvKey, v.encode(), jetstream.KeyTTL(c.lease))
		if err == nil {
			return claimed{rev: rev, fence: rev}, nil, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return claimed{}, nil, jsutil.Wrap(err, "claim ack record %q in bucket %q", kvKey, s.bucket)
		}
		r, err := s.getKV(ctx, kvKey)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // released meanwhile
		}
		if err != nil {
			return claimed{}, nil, err
		}
		if r.State != StateFailed {
			return claimed{}, &r, nil
		}
		rev, err = s.publish(ctx, kvKey, v.encode(), r.Revision, c.lease)
		if err == nil {
			return claimed{rev: rev, fence: rev, tookOver: true}, nil, nil
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return claimed{}, nil, jsutil.Wrap(err, "claim ack record %q in bucket %q", kvKey, s.bucket)
		}
	}
	return claimed{}, nil, jsutil.Errorf(jsutil.ErrConflict, "claim ack record %q in bucket %q: too many concurrent changes", kvKey, s.bucket)
}

// runLeased runs the handler while renewing the claim's lease. It returns
// the handler's error, the claim's latest revision, and whether the lease
// was lost.
//
// Renewal: kv.Update cannot set a TTL (and Create only works on an empty
// key), so a renewal publishes the claim again to the key's subject with
// Nats-Expected-Last-Subject-Sequence = the revision we hold (the same
// compare-and-set Update does) and Nats-TTL = the lease. With history 1 the
// new value replaces the old one, and its TTL restarts the lease on the
// server. If the compare-and-set fails, someone else changed the record
// (our lease had run out and another worker claimed it, or it was
// forgotten): the lease is lost, the handler's context is cancelled and
// nothing is acked or marked done. A renewal that fails for another reason
// (a connection problem) is retried at the next tick; once the lease would
// have run out since the last good renewal, it counts as lost too.
func (s *Store) runLeased(ctx context.Context, cl claimed, kvKey string, d Delivery, handler Handler, c *processConfig) (error, uint64, bool) {
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu   sync.Mutex
		rev  = cl.rev
		lost bool
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		every := c.lease / 3
		t := time.NewTicker(every)
		defer t.Stop()
		lastOK := time.Now()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			mu.Lock()
			cur := rev
			mu.Unlock()
			v := value{State: StateClaim, Seq: d.Seq, Hash: PayloadHash(d.Msg.Data()), Worker: s.worker, Fence: cl.fence, Deliveries: d.Deliveries, Expires: time.Now().Add(c.lease).UnixNano(), Key: keepKey(d)}
			rctx, rcancel := context.WithTimeout(hctx, every)
			nrev, err := s.publish(rctx, kvKey, v.encode(), cur, c.lease)
			rcancel()
			mu.Lock()
			switch {
			case err == nil:
				rev, lastOK = nrev, time.Now()
				_ = d.Msg.InProgress() // keep JetStream from redelivering meanwhile
			case errors.Is(err, jetstream.ErrKeyRevisionMismatch), time.Since(lastOK) >= c.lease-every/2:
				lost = true
			}
			l := lost
			mu.Unlock()
			if l {
				cancel()
				return
			}
		}
	}()
	herr := handler(hctx, d)
	close(stop)
	<-done
	mu.Lock()
	defer mu.Unlock()
	return herr, rev, lost
}

// markDone turns the claim into a done record: a compare-and-set on the
// revision we hold, without a TTL, so the record lives for the bucket's
// retention. If the write's outcome is unknown (a connection problem), the
// record is read back: done with our fence means it landed.
func (s *Store) markDone(ctx context.Context, kvKey string, rev uint64, hash string, fence uint64, d Delivery) error {
	v := value{State: StateDone, Seq: d.Seq, Hash: hash, Worker: s.worker, Fence: fence, Deliveries: d.Deliveries, Key: keepKey(d)}
	last := ctx.Err()
	for attempt := 0; ctx.Err() == nil; attempt++ {
		// Each attempt gets a slice of the budget: a request sent to a
		// leader that is stepping down may never be answered, and must not
		// use up the time the retries need.
		actx, cancel := attemptContext(ctx)
		_, err := s.publish(actx, kvKey, v.encode(), rev, 0)
		cancel()
		if err == nil {
			return nil
		}
		last = err
		actx, cancel = attemptContext(ctx)
		r, gerr := s.getKV(actx, kvKey)
		cancel()
		if gerr == nil && r.State == StateDone && r.Fence == fence {
			return nil
		}
		if gerr == nil && r.Revision != rev || errors.Is(gerr, jetstream.ErrKeyNotFound) {
			return jsutil.Classify(jsutil.ErrConflict, fmt.Errorf("mark ack record %q done: %w", kvKey, ErrLeaseLost))
		}
		select {
		case <-ctx.Done():
		case <-time.After(min(time.Duration(attempt+1)*100*time.Millisecond, time.Second)):
		}
	}
	return jsutil.Wrap(last, "mark ack record %q done in bucket %q", kvKey, s.bucket)
}

// attemptContext bounds one attempt of a retried write to a quarter of
// what is left of ctx's deadline, between 100ms and 2s.
func attemptContext(ctx context.Context) (context.Context, context.CancelFunc) {
	per := 2 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		per = min(max(time.Until(dl)/4, 100*time.Millisecond), 2*time.Second)
	}
	return context.WithTimeout(ctx, per)
}
