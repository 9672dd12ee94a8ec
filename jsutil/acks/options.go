package acks

import (
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
	keyHeader    string
	subjects     []string
	lease        time.Duration
	busyDelay    time.Duration
	retryDelay   time.Duration
	maxDeliver   int
	maxFailures  int
	maxCannotRun int
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
	if c.keyHeader == "" {
		c.keyHeader = DefaultKeyHeader
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
