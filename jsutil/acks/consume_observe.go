package acks

import (
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// What Consume reports beyond its results, for a caller that watches a run
// from outside (a health endpoint, metrics): each pull request's outcome,
// the end of fetching, and the dead letters its sweeps publish.

// Fetch is one pull request of Consume's fetcher, or the fetcher's end, as
// OnFetch reports it.
type Fetch struct {
	// Answered: the server answered the pull request, with messages or,
	// once it expired, with none.
	Answered bool
	// Messages is how many messages the pull request brought.
	Messages int
	// Err is why a pull request was not answered (a timeout, a connection
	// being re-established, no responders, the consumer deleted) or, with
	// Stopped, the error that ends the run (nil when WithMaxMessages,
	// WithIdle or the run's context ended it).
	Err error
	// ConsumerGone: the server said the consumer was deleted or does not
	// exist.
	ConsumerGone bool
	// Stopped: the fetcher stopped; no pull request follows.
	Stopped bool
}

// observers are the callbacks of OnFetch and OnSweep.
type observers struct {
	fetch func(Fetch)
	sweep func(published int)
}

// OnFetch calls fn after each of Consume's pull requests and once when it
// stops fetching, from the fetcher's goroutine: fn must return quickly.
func OnFetch(fn func(Fetch)) ConsumeOption {
	return consumeOpt(func(c *consumeConfig) { c.observe.fetch = fn })
}

// OnSweep calls fn with the number of dead letters each of Consume's
// sweeps published (see SweepDeadLetters): Summary.DeadLettered counts
// them with the results whose DeadLettered is set.
func OnSweep(fn func(published int)) ConsumeOption {
	return consumeOpt(func(c *consumeConfig) { c.observe.sweep = fn })
}

// fetched reports one pull request's outcome.
func (l *loop) fetched(got int, err error) {
	if l.c.observe.fetch == nil {
		return
	}
	answered := err == nil || errors.Is(err, jetstream.ErrNoMessages)
	f := Fetch{Answered: answered, Messages: got, ConsumerGone: consumerGone(err)}
	if !answered {
		f.Err = err
	}
	l.c.observe.fetch(f)
}

// fetchStopped reports the fetcher's end.
func (l *loop) fetchStopped(err error) {
	if l.c.observe.fetch != nil {
		l.c.observe.fetch(Fetch{Stopped: true, Err: err, ConsumerGone: consumerGone(err)})
	}
}

// swept reports what a sweep published.
func (l *loop) swept(published int) {
	if l.c.observe.sweep != nil && published > 0 {
		l.c.observe.sweep(published)
	}
}

func consumerGone(err error) bool {
	return errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound)
}
