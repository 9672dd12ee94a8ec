package commands

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go/jetstream"
)

// consumeHealth is what consume's /healthz and /readyz say (see
// docs/consume.md, "Health"):
//
//   - /healthz is 200 while the worker is connected and the server answers
//     it about an existing consumer: its pull requests (answered at least
//     once a second while it waits for messages), or, while they are not
//     answered or while every worker is busy, a look at the consumer's
//     info once a second. It is 503 with the reason when the run is
//     stopping, when the server says the consumer does not exist, when the
//     connection is down, or when nothing was answered for longer than
//     --timeout.
//   - /readyz is 200 once a pull request was answered, until the run stops.
//
// The reasons are one line each and name the consumer, the stream and the
// time of the last answer.
type consumeHealth struct {
	stream, consumer string
	// unanswered is how long without an answer is unhealthy (--timeout).
	unanswered time.Duration
	// connected reports whether the connection is up.
	connected func() bool
	now       func() time.Time

	mu         sync.Mutex
	ready      bool
	lastAnswer time.Time // the last answer about the consumer
	goneSince  time.Time // when the server first said it does not exist (zero: it exists)
	lastErr    error     // why the last pull or look was not answered
	stopping   string    // why the run stops ("" while it runs)
}

func newConsumeHealth(stream, consumer string, unanswered time.Duration, connected func() bool, now func() time.Time) *consumeHealth {
	// The consumer's info, read as the run started, was an answer.
	return &consumeHealth{stream: stream, consumer: consumer, unanswered: unanswered, connected: connected, now: now, lastAnswer: now()}
}

// fetched notes one of the fetcher's reports (acks.OnFetch).
func (h *consumeHealth) fetched(f acks.Fetch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case f.Stopped && f.Err != nil:
		h.stopLocked("the run ends: " + f.Err.Error())
	case f.Stopped:
		h.stopLocked("the run ends (--max, --idle or a signal)")
	case f.Answered:
		h.answeredLocked()
		h.ready = true
	default:
		h.notAnsweredLocked(f.Err, f.ConsumerGone)
	}
}

// looked notes the outcome of a look at the consumer's info.
func (h *consumeHealth) looked(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		h.answeredLocked()
		return
	}
	h.notAnsweredLocked(err, errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrConsumerDeleted))
}

func (h *consumeHealth) answeredLocked() {
	h.lastAnswer, h.goneSince, h.lastErr = h.now(), time.Time{}, nil
}

func (h *consumeHealth) notAnsweredLocked(err error, gone bool) {
	h.lastErr = err
	if gone {
		// The server answered, but about a consumer that is not there.
		if h.goneSince.IsZero() {
			h.goneSince = h.now()
		}
		h.lastAnswer = h.now()
	}
}

// stop notes that the run is stopping, and why.
func (h *consumeHealth) stop(reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopLocked(reason)
}

func (h *consumeHealth) stopLocked(reason string) {
	if h.stopping == "" {
		h.stopping = reason
	}
}

// answeredRecently reports whether the server answered within the last
// second (then no look at the consumer's info is needed).
func (h *consumeHealth) answeredRecently() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.goneSince.IsZero() && h.now().Sub(h.lastAnswer) < time.Second
}

// healthy is /healthz: whether the worker can work, else why not.
func (h *consumeHealth) healthy() (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	since := h.lastAnswer.UTC().Format(time.RFC3339)
	switch {
	case h.stopping != "":
		return false, "stopping: " + h.stopping
	case !h.goneSince.IsZero():
		return false, fmt.Sprintf("consumer %q on stream %q does not exist (deleted?): the server says so since %s", h.consumer, h.stream, h.goneSince.UTC().Format(time.RFC3339))
	case !h.connected():
		return false, fmt.Sprintf("not connected to the server (reconnecting); no answer since %s", since)
	case now.Sub(h.lastAnswer) > h.unanswered:
		why := ""
		if h.lastErr != nil {
			why = " (" + h.lastErr.Error() + ")"
		}
		return false, fmt.Sprintf("no answer from the server since %s, %s ago%s; asking again", since, now.Sub(h.lastAnswer).Round(time.Second), why)
	}
	return true, fmt.Sprintf("ok: fetching from consumer %q on stream %q; last answer %s", h.consumer, h.stream, h.lastAnswer.UTC().Format(time.RFC3339Nano))
}

// readiness is /readyz: ready once a pull request was answered, until the
// run stops.
func (h *consumeHealth) readiness() (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.stopping != "":
		return false, "stopping: " + h.stopping
	case !h.ready:
		return false, fmt.Sprintf("waiting for the first answered fetch from consumer %q on stream %q", h.consumer, h.stream)
	}
	return true, fmt.Sprintf("ready: consumer %q on stream %q answered a fetch", h.consumer, h.stream)
}

// watch looks at the consumer's info once a second while the server has
// not answered a pull request within the last second (every worker busy,
// or the pulls go unanswered), until ctx ends. Each look waits --timeout
// at most.
func (h *consumeHealth) watch(ctx context.Context, cons jetstream.Consumer, timeout time.Duration) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if h.answeredRecently() {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, timeout)
		_, err := cons.Info(lctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		h.looked(err)
	}
}
