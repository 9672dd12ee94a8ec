package jsutil

import (
	"context"
	"time"
)

// Retrier paces a loop that tries something until a deadline: a request
// sent again (WhileUnanswered), a step that looks at what the server holds
// after a lost reply, a poll for a state. It replaces the hand-written
// `deadline := time.Now().Add(d); for { ... }` loop.
type Retrier struct {
	// Deadline is when the loop stops trying.
	Deadline time.Time
	// Pause is the wait before attempt+1 (nil: Backoff).
	Pause   func(attempt int) time.Duration
	attempt int
}

// RetryUntil starts a loop that tries for d, pausing Backoff(attempt)
// between attempts.
func RetryUntil(d time.Duration) *Retrier {
	return &Retrier{Deadline: time.Now().Add(d)}
}

// RetryEvery starts a loop that tries for d, pausing every between
// attempts.
func RetryEvery(d, every time.Duration) *Retrier {
	return &Retrier{Deadline: time.Now().Add(d), Pause: func(int) time.Duration { return every }}
}

// Expired says whether the deadline has passed.
func (r *Retrier) Expired() bool { return time.Now().After(r.Deadline) }

// Attempt is the number of pauses so far.
func (r *Retrier) Attempt() int { return r.attempt }

// Again is called after an attempt failed with err (nil for a poll whose
// state is not there yet). It says whether to try again, after waiting the
// pause: not once the deadline has passed or ctx has ended, and, when err
// is one the retry rule sends again (Retryable), not once ctx's retry
// budget is spent (AskAgain, which also tells the user until when jsctl
// keeps asking).
func (r *Retrier) Again(ctx context.Context, err error) bool {
	if ctx.Err() != nil || r.Expired() {
		return false
	}
	if Retryable(err) && !AskAgain(ctx, r.Deadline, err) {
		return false
	}
	pause := Backoff
	if r.Pause != nil {
		pause = r.Pause
	}
	d := pause(r.attempt)
	r.attempt++
	return Sleep(ctx, d)
}
