package jsutil

import (
	"context"
	"sync"
	"time"
)

// The retry loops of this module (WhileUnanswered, and those of
// jsutil/reset) keep asking a server that does not answer for up to one
// budget, the retry budget. A command puts that budget, and a callback that
// tells the user what jsctl is waiting for, in the context it hands the
// library (WithRetry): the library reports, the command draws.

// Unanswered is what a retry loop reports when a request went unanswered
// (a timeout, a connection being re-established, JetStream unavailable for
// now) and it is about to ask again.
type Unanswered struct {
	// Until is when the loop stops asking and fails.
	Until time.Time
	// Err is the last request's error.
	Err error
	// Bucket, when set, names a bucket just opened whose read the server
	// answered "stream not found" (see OpenKV): the request was
	// answered, but that answer is asked again for a moment.
	Bucket string
}

type retryKey struct{}

type retrySettings struct {
	budget time.Duration
	report func(Unanswered)
	outage *outage
}

// outageGap is how long without an unanswered request ends an outage.
const outageGap = 10 * time.Second

// outage is the current run of unanswered requests.
type outage struct {
	mu          sync.Mutex
	first, last time.Time
}

// WithRetry returns ctx carrying the retry budget (0: DefaultSettle) and
// report, which retry loops call, from any goroutine, each time they are
// about to ask again after an unanswered request (nil: nobody is told).
func WithRetry(ctx context.Context, budget time.Duration, report func(Unanswered)) context.Context {
	return context.WithValue(ctx, retryKey{}, retrySettings{budget: budget, report: report, outage: &outage{}})
}

// RetryFor is the retry budget ctx carries (see WithRetry), else
// DefaultSettle.
func RetryFor(ctx context.Context) time.Duration {
	if s, ok := ctx.Value(retryKey{}).(retrySettings); ok && s.budget > 0 {
		return s.budget
	}
	return DefaultSettle
}

// AskAgain is called by a retry loop that gives up at until when a
// request went unanswered with err. It says whether to ask again: not
// once the outage has lasted ctx's whole budget (see WithRetry). If so, it
// tells ctx's callback until when the loop will keep asking.
func AskAgain(ctx context.Context, until time.Time, err error) bool {
	return askAgain(ctx, until, Unanswered{Err: err})
}

// askAgain is AskAgain reporting u (its Until set to the loop's end).
func askAgain(ctx context.Context, until time.Time, u Unanswered) bool {
	s, ok := ctx.Value(retryKey{}).(retrySettings)
	if !ok {
		return true
	}
	now := time.Now()
	if o := s.outage; o != nil {
		o.mu.Lock()
		if o.first.IsZero() || now.Sub(o.last) > outageGap {
			o.first = now
		}
		o.last = now
		end := o.first.Add(s.budget)
		o.mu.Unlock()
		if s.budget > 0 && !now.Before(end) {
			return false
		}
		if s.budget > 0 && end.Before(until) {
			until = end
		}
	}
	if s.report != nil {
		u.Until = until
		s.report(u)
	}
	return true
}
