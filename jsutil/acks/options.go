package acks

import (
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go"
)

// Processing defaults.
const (
	// DefaultKeyHeader is the header whose value is the dedup key.
	DefaultKeyHeader = nats.MsgIdHdr
	// DefaultLease is how long a claim lasts without renewal.
	DefaultLease = 30 * time.Second
	// DefaultRetryDelay is the first nak delay after a failed handler; it
	// doubles with each failed delivery up to MaxRetryDelay.
	DefaultRetryDelay = time.Second
	// MaxRetryDelay bounds the nak delay of a failing message.
	MaxRetryDelay = time.Minute
	// DefaultMaxCannotRun is how many deliveries a message whose handler
	// cannot run (CannotRun, a corrupt record) gets before it is
	// terminated and recorded as failed.
	DefaultMaxCannotRun = 5
	// minRetryDelay is the shortest nak delay of a failing message: no
	// message is ever redelivered in a tight loop.
	minRetryDelay = 100 * time.Millisecond
)

// ProcessOption configures Process (and Consume).
type ProcessOption interface {
	ConsumeOption
	applyProcess(*processConfig)
}

type processConfig struct {
	scope        string
	keys         []KeySpec
	keyFunc      KeyFunc
	keyFuncName  string
	keyRequired  bool
	keySpec      string // the specs as records name them (set by check)
	onDuplicate  DuplicatePolicy
	onMismatch   MismatchPolicy
	deadLetter   string
	subjects     []string
	lease        time.Duration
	busyDelay    time.Duration
	retryDelay   time.Duration
	maxDeliver   int
	maxFailures  int
	maxCannotRun int
	drain        time.Duration
	// streamCreated and consumerCreated are the incarnations the run's
	// consumer and its stream are (set by Consume; zero: asked when a
	// record or floor needs judging, see incarnation.go).
	streamCreated, consumerCreated time.Time
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
// Nats-Msg-Id); a message without it is keyed by its stream sequence. It is
// WithKey(HeaderKey(h)).
func WithKeyHeader(h string) ProcessOption {
	if h == "" {
		return WithKey() // the default, as before
	}
	return WithKey(HeaderKey(h))
}

// WithKey sets where the dedup key comes from (default: the header
// Nats-Msg-Id); several specs make a key of several parts (see KeySpec).
// A message that lacks a part is keyed by its stream sequence, unless
// WithKeyRequired. The record keeps the spec that produced its key.
func WithKey(specs ...KeySpec) ProcessOption {
	return processOpt(func(c *processConfig) { c.keys, c.keyFunc = specs, nil })
}

// WithKeyFunc derives dedup keys with fn instead of key specs; name is
// kept in each record as the spec that produced its key.
func WithKeyFunc(name string, fn KeyFunc) ProcessOption {
	return processOpt(func(c *processConfig) { c.keyFunc, c.keyFuncName, c.keys = fn, name, nil })
}

// WithKeyRequired makes a message without a key (see WithKey) fail for
// good instead of being keyed by its stream sequence: it is recorded as
// failed with the reason (under its sequence key), dead-lettered with
// WithDeadLetter, and terminated, without running the handler.
func WithKeyRequired() ProcessOption {
	return processOpt(func(c *processConfig) { c.keyRequired = true })
}

// DuplicatePolicy says what happens to a message whose key is done.
type DuplicatePolicy string

// Duplicate policies.
const (
	// DuplicateSkip acks a duplicate without running the handler.
	DuplicateSkip DuplicatePolicy = "skip"
	// DuplicateRun runs the handler on a duplicate, with Delivery.Duplicate
	// set, for handlers that decide for themselves. Such a run takes no
	// claim and changes no record.
	DuplicateRun DuplicatePolicy = "run"
)

// WithOnDuplicate sets the duplicate policy (default DuplicateSkip).
func WithOnDuplicate(p DuplicatePolicy) ProcessOption {
	return processOpt(func(c *processConfig) { c.onDuplicate = p })
}

// MismatchPolicy says what happens to a message whose key is done for a
// different payload (another message reusing the key).
type MismatchPolicy string

// Mismatch policies.
const (
	// MismatchReport reports it (Result.Mismatch) and otherwise treats it
	// as a duplicate (see WithOnDuplicate).
	MismatchReport MismatchPolicy = "report"
	// MismatchRun runs the handler, with Delivery.Duplicate and
	// Delivery.Mismatch set (no claim, no record change).
	MismatchRun MismatchPolicy = "run"
	// MismatchFail fails the message for good: it is dead-lettered with
	// WithDeadLetter and terminated; the key's done record is kept.
	MismatchFail MismatchPolicy = "fail"
)

// WithOnMismatch sets the mismatch policy (default MismatchReport).
func WithOnMismatch(p MismatchPolicy) ProcessOption {
	return processOpt(func(c *processConfig) { c.onMismatch = p })
}

// WithDeadLetter publishes every message that fails for good to subject
// before it is terminated (see DeadLetter for the protocol and headers).
// A stream must capture the subject.
func WithDeadLetter(subject string) ProcessOption {
	return processOpt(func(c *processConfig) { c.deadLetter = subject })
}

// WithIdempotentSubjects limits records to messages on subjects matching
// any of the patterns (NATS wildcards); others are processed at least once
// without a record. Default: all subjects.
func WithIdempotentSubjects(patterns ...string) ProcessOption {
	return processOpt(func(c *processConfig) { c.subjects = append(c.subjects, patterns...) })
}

// WithLease sets how long a claim lasts without renewal (default
// DefaultLease; whole seconds, at least 1s, and at least MinReplicatedLease
// on a replicated bucket). The claim is renewed while the handler runs
// (see MinReplicatedLease for what that guarantees).
func WithLease(d time.Duration) ProcessOption {
	return processOpt(func(c *processConfig) { c.lease = d })
}

// WithBusyDelay sets the nak delay for a message whose claim another worker
// holds (default: until that claim's lease would run out).
func WithBusyDelay(d time.Duration) ProcessOption {
	return processOpt(func(c *processConfig) { c.busyDelay = d })
}

// WithRetryDelay sets the first nak delay after a failed handler (default
// DefaultRetryDelay, at least 100ms); it doubles with each failed delivery
// of the message, up to MaxRetryDelay.
func WithRetryDelay(d time.Duration) ProcessOption {
	return processOpt(func(c *processConfig) { c.retryDelay = d })
}

// WithMaxDeliver tells Process the consumer's MaxDeliver: a handler that
// fails on the last allowed delivery leaves a failed record and the message
// is terminated. Consume sets it from the consumer.
func WithMaxDeliver(n int) ProcessOption {
	return processOpt(func(c *processConfig) { c.maxDeliver = n })
}

// WithMaxFailures ends a message that failed on n deliveries (earlier than
// the consumer's MaxDeliver): a failed record is kept and the message is
// terminated. 0: only MaxDeliver ends it.
func WithMaxFailures(n int) ProcessOption {
	return processOpt(func(c *processConfig) { c.maxFailures = n })
}

// WithMaxCannotRun sets how many deliveries a message whose handler cannot
// run (see CannotRun) gets before it is terminated and recorded as failed
// (default DefaultMaxCannotRun).
func WithMaxCannotRun(n int) ProcessOption {
	return processOpt(func(c *processConfig) { c.maxCannotRun = n })
}

func (c *processConfig) check() error {
	if len(c.keys) == 0 && c.keyFunc == nil {
		c.keys = []KeySpec{HeaderKey(DefaultKeyHeader)}
	}
	for _, k := range c.keys {
		if k.kind == "" || (k.kind == KeyFromHeader && k.name == "") {
			return jsutil.Errorf(jsutil.ErrBadInput, "empty key spec (build key specs with ParseKeySpec or HeaderKey)")
		}
	}
	if c.keyFunc != nil && c.keyFuncName == "" {
		c.keyFuncName = "func"
	}
	specs := make([]string, len(c.keys))
	for i, k := range c.keys {
		specs[i] = k.String()
	}
	c.keySpec = strings.Join(specs, " + ")
	switch c.onDuplicate {
	case "":
		c.onDuplicate = DuplicateSkip
	case DuplicateSkip, DuplicateRun:
	default:
		return jsutil.Errorf(jsutil.ErrBadInput, "unknown duplicate policy %q (want skip or run)", c.onDuplicate)
	}
	switch c.onMismatch {
	case "":
		c.onMismatch = MismatchReport
	case MismatchReport, MismatchRun, MismatchFail:
	default:
		return jsutil.Errorf(jsutil.ErrBadInput, "unknown mismatch policy %q (want report, run or fail)", c.onMismatch)
	}
	if c.deadLetter != "" && (!validPattern(c.deadLetter) || strings.ContainsAny(c.deadLetter, "*>")) {
		return jsutil.Errorf(jsutil.ErrBadInput, "dead-letter subject %q is not a valid subject (no wildcards)", c.deadLetter)
	}
	if c.lease == 0 {
		c.lease = DefaultLease
	}
	if c.lease < time.Second || c.lease%time.Second != 0 {
		return jsutil.Errorf(jsutil.ErrBadInput, "lease %v: want whole seconds, at least 1s (the server counts TTLs in seconds)", c.lease)
	}
	if c.retryDelay == 0 {
		c.retryDelay = DefaultRetryDelay
	}
	if c.retryDelay < 0 || c.busyDelay < 0 {
		return jsutil.Errorf(jsutil.ErrBadInput, "negative retry or busy delay")
	}
	if c.maxFailures < 0 || c.maxCannotRun < 0 {
		return jsutil.Errorf(jsutil.ErrBadInput, "negative failure bound")
	}
	if c.maxCannotRun == 0 {
		c.maxCannotRun = DefaultMaxCannotRun
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

// backoff is the nak delay after the n-th failed delivery: base (at least
// minRetryDelay) doubled per earlier delivery, at most MaxRetryDelay.
func backoff(base time.Duration, n uint64) time.Duration {
	d := max(base, minRetryDelay)
	for i := uint64(1); i < n && d < MaxRetryDelay; i++ {
		d *= 2
	}
	return min(d, MaxRetryDelay)
}

// final reports whether a failure on delivery n is the message's last:
// the consumer will not deliver it again, or it reached a bound of ours.
func (c *processConfig) final(n uint64, bound int) bool {
	return (c.maxDeliver > 0 && n >= uint64(c.maxDeliver)) || (bound > 0 && n >= uint64(bound))
}

// ConsumeOption configures Consume. Every ProcessOption is one too.
type ConsumeOption interface {
	applyConsume(*consumeConfig)
}

type consumeConfig struct {
	processConfig
	workers   int
	max       int
	idle      time.Duration
	prefetch  int
	batch     int
	batchWait time.Duration
	onResult  func(Result)
	observe   observers // OnFetch, OnSweep (consume_observe.go)
}

type consumeOpt func(*consumeConfig)

func (f consumeOpt) applyConsume(c *consumeConfig) { f(c) }

// Upper bounds of the Consume options that size buffers: the queue of
// fetched messages holds about 2 × workers × batch + prefetch entries.
const (
	MaxWorkers  = 1000  // WithWorkers
	MaxPrefetch = 10000 // WithPrefetch
	MaxBatch    = 10000 // WithBatch
)

// WithWorkers sets how many handlers run at once (default 1, at most
// MaxWorkers).
func WithWorkers(n int) ConsumeOption { return consumeOpt(func(c *consumeConfig) { c.workers = n }) }

// WithMaxMessages stops Consume after n deliveries were handled (processed,
// duplicate or failed; busy ones are deferred, not handled). 0: no limit.
func WithMaxMessages(n int) ConsumeOption { return consumeOpt(func(c *consumeConfig) { c.max = n }) }

// WithIdle stops Consume once no message arrived for d (and none is in
// flight). 0: never.
func WithIdle(d time.Duration) ConsumeOption {
	return consumeOpt(func(c *consumeConfig) { c.idle = d })
}

// WithDrainTimeout bounds how long handlers in flight may run on after
// the context of Consume (or Retry) is cancelled, the run's own stop,
// before their contexts are cancelled too, with ErrStopped as the cause
// (default: the lease). A handler that then returns an error is Released,
// not failed: see ErrStopped.
func WithDrainTimeout(d time.Duration) ProcessOption {
	return processOpt(func(c *processConfig) { c.drain = d })
}

// WithPrefetch bounds how many messages Consume fetches ahead of its free
// workers (default: automatic, up to max(64, 4×workers), fewer when
// handlers are slow; see Consume; at most MaxPrefetch). 0 keeps the
// default.
func WithPrefetch(n int) ConsumeOption {
	return consumeOpt(func(c *consumeConfig) { c.prefetch = n })
}

// OnResult calls fn after each delivery (from a worker's goroutine; calls
// may be concurrent).
func OnResult(fn func(Result)) ConsumeOption {
	return consumeOpt(func(c *consumeConfig) { c.onResult = fn })
}

// Summary counts what Consume did.
type Summary struct {
	Processed  int `json:"processed"`
	Duplicates int `json:"duplicates"`
	// Failed counts distinct messages that failed in this run and had not
	// succeeded by its end; FailedDeliveries counts every failed delivery.
	Failed           int `json:"failed"`
	FailedDeliveries int `json:"failed_deliveries"`
	// Terminated counts messages that failed for good (a failed record
	// was kept and the message terminated).
	Terminated int `json:"terminated"`
	Busy       int `json:"busy"`
	Mismatches int `json:"mismatches"`
	// Floor is the end of the consumer's floor when Consume stopped.
	Floor uint64 `json:"floor"`
	// Warnings are things a person should know (a corrupt floor that was
	// ignored, ...), each said once.
	Warnings []string `json:"warnings"`
	// DuplicateRuns counts the processed messages that were duplicates run
	// again (WithOnDuplicate, WithOnMismatch).
	DuplicateRuns int `json:"duplicate_runs"`
	// DeadLettered counts the dead letters published in this run (see
	// WithDeadLetter), those a sweep published included.
	DeadLettered int `json:"dead_lettered"`
	// Released counts the handlers ended by the run's own stop (see
	// ErrStopped): their messages run again on their next delivery.
	Released int `json:"released"`
}

// Handled is the number of deliveries processed, skipped as duplicates or
// failed.
func (s Summary) Handled() int { return s.Processed + s.Duplicates + s.FailedDeliveries }
