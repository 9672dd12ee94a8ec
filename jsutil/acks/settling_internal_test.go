package acks

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// settling asks again after "stream not found" only just after the bucket
// was opened; any other error, and "not found" later, is final at once.
func TestSettling(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		opened time.Time
		errs   []error
		calls  int
		ok     bool
	}{
		{"just opened, not found twice", time.Now(), []error{jetstream.ErrStreamNotFound, nats.ErrStreamNotFound}, 3, true},
		{"just opened, another error", time.Now(), []error{jetstream.ErrBucketExists}, 1, false},
		{"opened long ago, not found", time.Now().Add(-time.Hour), []error{jetstream.ErrStreamNotFound}, 1, false},
	} {
		calls := 0
		err := settling(ctx, tc.opened, func() error {
			calls++
			if calls <= len(tc.errs) {
				return tc.errs[calls-1]
			}
			return nil
		})
		if calls != tc.calls || (err == nil) != tc.ok {
			t.Errorf("%s: %d calls, error %v; want %d calls, success %v", tc.name, calls, err, tc.calls, tc.ok)
		}
		if err != nil && !errors.Is(err, tc.errs[len(tc.errs)-1]) {
			t.Errorf("%s: error %v is not the last one f returned", tc.name, err)
		}
	}
}
