package positions

import (
	"context"
	"fmt"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// UntilResumed is the pause time to give Pause for a pause without an end:
// the server needs a time, and this one (the end of the year 9999) never
// comes.
func UntilResumed() time.Time { return time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC) }

// PauseState is a consumer's pause state as the server reported it after a
// pause or resume.
type PauseState struct {
	Stream   string `json:"stream"`
	Consumer string `json:"consumer"`
	Paused   bool   `json:"paused"`
	// PauseUntil is when the pause ends by itself (nil when not paused).
	PauseUntil *time.Time `json:"pause_until"`
	// UntilResumed is set for a pause without an end (PauseUntil is then
	// the year 9999).
	UntilResumed bool `json:"until_resumed"`
}

// Pause pauses a consumer until the given time (UntilResumed for no end),
// with the server's pause API: it keeps its position and configuration but
// delivers nothing until then, or until Resume. It returns once the
// consumer reports the pause (on a cluster the server answers before it
// applies it). A time that has passed is an error wrapping
// jsutil.ErrBadInput.
func Pause(ctx context.Context, js jetstream.JetStream, stream, consumer string, until time.Time, opts Options) (*PauseState, error) {
	opts = opts.withDefaults()
	if err := checkNames(stream, consumer); err != nil {
		return nil, err
	}
	if v, old := jsutil.ServerBefore(js, jsutil.PauseAPISince); old {
		return nil, jsutil.ErrServerLacks(fmt.Sprintf("pause consumer %q on %q", consumer, stream), "consumer pause API", v, jsutil.PauseAPISince)
	}
	if !until.After(opts.Now()) {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "pause consumer %q on %q: %s has passed; give a time in the future", consumer, stream, until.UTC().Format(time.RFC3339))
	}
	rctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	resp, err := js.PauseConsumer(rctx, stream, consumer, until)
	if err != nil {
		return nil, jsutil.Wrap(err, "pause consumer %q on %q", consumer, stream)
	}
	if resp.Paused {
		// On a cluster the server answers once the pause is proposed,
		// before the consumer applies it: wait until the consumer reports
		// it, so that what follows (a check, a fetch, a script reading the
		// consumer) finds it paused.
		wctx, cancel := context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
		if err := waitPaused(wctx, js, stream, consumer, resp.PauseUntil); err != nil {
			return nil, jsutil.Wrap(err, "pause consumer %q on %q: wait for the server to report it paused", consumer, stream)
		}
	}
	return pauseState(stream, consumer, resp), nil
}

// waitPaused polls the consumer's info until it reports the pause until
// until: paused, or holding that pause time in its configuration (a short
// pause may be over by the time it is read).
func waitPaused(ctx context.Context, js jetstream.JetStream, stream, consumer string, until time.Time) error {
	for {
		c, err := js.Consumer(ctx, stream, consumer)
		if err != nil {
			return err
		}
		if ci := c.CachedInfo(); ci.Paused || (ci.Config.PauseUntil != nil && ci.Config.PauseUntil.Equal(until)) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Resume ends a consumer's pause; resuming a consumer that is not paused
// changes nothing.
//
// A consumer resumed before its pause time does not wake on nats-server
// 2.15.2: a pull request already waiting would be served only when
// something else wakes the consumer (a new message, a new pull request,
// the request's heartbeat). A pause that ends by itself does wake it, so
// Resume first sets the pause to end wakeDelay from now by the server's
// clock (from the consumer info's timestamp), waits for it to end, then
// clears it from the configuration.
func Resume(ctx context.Context, js jetstream.JetStream, stream, consumer string, opts Options) (*PauseState, error) {
	opts = opts.withDefaults()
	if err := checkNames(stream, consumer); err != nil {
		return nil, err
	}
	if v, old := jsutil.ServerBefore(js, jsutil.PauseAPISince); old {
		return nil, jsutil.ErrServerLacks(fmt.Sprintf("resume consumer %q on %q", consumer, stream), "consumer pause API", v, jsutil.PauseAPISince)
	}
	rctx, cancel := context.WithTimeout(ctx, opts.Timeout+2*wakeWait)
	defer cancel()
	fail := func(err error) (*PauseState, error) {
		return nil, jsutil.Wrap(err, "resume consumer %q on %q", consumer, stream)
	}
	c, err := js.Consumer(rctx, stream, consumer)
	if err != nil {
		return fail(err)
	}
	t0 := time.Now()
	info, err := c.Info(rctx)
	if err != nil {
		return fail(err)
	}
	if info.Paused {
		now := time.Now()
		if !info.TimeStamp.IsZero() {
			now = info.TimeStamp.Add(time.Since(t0))
		}
		if _, err := js.PauseConsumer(rctx, stream, consumer, now.Add(wakeDelay)); err != nil {
			return fail(err)
		}
		rt := jsutil.RetryEvery(wakeWait, 50*time.Millisecond)
		for {
			info, err := c.Info(rctx)
			if err != nil {
				return fail(err)
			}
			if !info.Paused || rt.Expired() {
				break
			}
			if !rt.Again(rctx, nil) {
				if rctx.Err() != nil {
					return fail(rctx.Err())
				}
				break
			}
		}
	}
	resp, err := js.ResumeConsumer(rctx, stream, consumer)
	if err != nil {
		return fail(err)
	}
	return pauseState(stream, consumer, resp), nil
}

// wakeDelay is how far ahead Resume lets a pause end by itself (which wakes
// the consumer); wakeWait bounds the wait for it.
const (
	wakeDelay = 300 * time.Millisecond
	wakeWait  = 5 * time.Second
)

func pauseState(stream, consumer string, resp *jetstream.ConsumerPauseResponse) *PauseState {
	st := &PauseState{Stream: stream, Consumer: consumer, Paused: resp.Paused}
	if resp.Paused && !resp.PauseUntil.IsZero() {
		t := resp.PauseUntil.UTC()
		st.PauseUntil = &t
		st.UntilResumed = !t.Before(UntilResumed())
	}
	return st
}

func checkNames(stream, consumer string) error {
	if err := checkName("stream", stream); err != nil {
		return err
	}
	return checkName("consumer", consumer)
}

// PauseOf reads a consumer's pause state and its creation time (which
// tells it from a consumer of the same name deleted and created again
// later). A missing stream or consumer is an error wrapping
// jsutil.ErrNotFound; errors start with `consumer "NAME" on "STREAM"`, for
// the caller to say what it was doing.
func PauseOf(ctx context.Context, js jetstream.JetStream, stream, consumer string, opts Options) (*PauseState, time.Time, error) {
	opts = opts.withDefaults()
	if err := checkNames(stream, consumer); err != nil {
		return nil, time.Time{}, err
	}
	rctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	c, err := js.Consumer(rctx, stream, consumer)
	if err != nil {
		return nil, time.Time{}, jsutil.Wrap(err, "consumer %q on %q", consumer, stream)
	}
	ci := c.CachedInfo()
	st := &PauseState{Stream: stream, Consumer: consumer, Paused: ci.Paused}
	if ci.Paused && ci.Config.PauseUntil != nil {
		t := ci.Config.PauseUntil.UTC()
		st.PauseUntil = &t
		st.UntilResumed = !t.Before(UntilResumed())
	}
	return st, ci.Created, nil
}
