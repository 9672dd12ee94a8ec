package testserver

import (
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Take takes up to n of the messages cons has for a client now, calling
// each for every one in order. It waits at most wait for the first (on a
// loaded machine a delivery, above all right after a leader change or a
// recreate, can take a moment), then takes what is there without waiting.
// It returns the first error of a pull or of each.
func Take(cons jetstream.Consumer, n int, wait time.Duration, each func(jetstream.Msg) error) error {
	deadline := time.Now().Add(wait)
	took := 0
	for took < n {
		b, err := cons.FetchNoWait(n - took)
		if errors.Is(err, nats.ErrNoResponders) && time.Now().Before(deadline) {
			// A consumer just made, or just given a new leader, may
			// not take pull requests yet (status 503): ask again.
			time.Sleep(10 * time.Millisecond) // poll interval of a bounded wait
			continue
		}
		if err != nil {
			return err
		}
		got := 0
		for m := range b.Messages() {
			got++
			if err := each(m); err != nil {
				return err
			}
		}
		took += got
		err = b.Error()
		if errors.Is(err, nats.ErrNoResponders) && got == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond) // as above: not taking pulls yet
			continue
		}
		if err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return err
		}
		if got == 0 {
			if took > 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond) // poll interval of a bounded wait
		}
	}
	return nil
}
