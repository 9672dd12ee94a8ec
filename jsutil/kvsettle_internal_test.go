package jsutil

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// settleAfter asks again after "stream not found" only just after the
// bucket was opened, and says so to the retry callback each time; any
// other error, and "not found" later, is final at once, unsaid.
func TestSettleAfter(t *testing.T) {
	// justNow is an opening whose window outlasts the test however slow
	// the machine: an hour from now, plus SettleAfterOpen.
	justNow := time.Now().Add(time.Hour)
	for _, tc := range []struct {
		name   string
		opened time.Time
		errs   []error
		calls  int
		ok     bool
	}{
		{"just opened, not found twice", justNow, []error{jetstream.ErrStreamNotFound, nats.ErrStreamNotFound}, 3, true},
		{"just opened, another error", justNow, []error{jetstream.ErrBucketExists}, 1, false},
		{"opened long ago, not found", time.Now().Add(-time.Hour), []error{jetstream.ErrStreamNotFound}, 1, false},
	} {
		var told []Unanswered
		ctx := WithRetry(context.Background(), 2*time.Hour, func(u Unanswered) { told = append(told, u) }) // a budget past the window
		calls := 0
		err := settleAfter(ctx, "B", tc.opened, func() error {
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
		if len(told) != tc.calls-1 {
			t.Errorf("%s: told %d times, want once before each new attempt (%d)", tc.name, len(told), tc.calls-1)
		}
		for _, u := range told {
			if u.Bucket != "B" || u.Until.Sub(tc.opened.Add(SettleAfterOpen)).Abs() > time.Second || !errors.Is(u.Err, jetstream.ErrStreamNotFound) && !errors.Is(u.Err, nats.ErrStreamNotFound) {
				t.Errorf("%s: told %+v, want bucket B, until %s, \"stream not found\"", tc.name, u, tc.opened.Add(SettleAfterOpen))
			}
		}
	}
}

// The retry budget bounds the asking again: opened in an hour, the
// settle window would keep asking for an hour; the 300ms budget ends it.
func TestSettleAfterBudget(t *testing.T) {
	ctx := WithRetry(context.Background(), 300*time.Millisecond, nil)
	calls := 0
	err := settleAfter(ctx, "B", time.Now().Add(time.Hour), func() error { calls++; return jetstream.ErrStreamNotFound })
	if !errors.Is(err, jetstream.ErrStreamNotFound) || calls < 2 {
		t.Fatalf("%d calls, error %v; want it asked again, then \"not found\" once the budget was spent", calls, err)
	}
}

// notYetKV answers every read "stream not found" until it has been asked
// left times, as a server that has not learnt of a new stream yet does.
type notYetKV struct {
	jetstream.KeyValue // nil: any other method panics
	left               int
}

func (k *notYetKV) answer() error {
	if k.left > 0 {
		k.left--
		return jetstream.ErrStreamNotFound
	}
	return nil
}

func (k *notYetKV) Bucket() string { return "B" }

func (k *notYetKV) Status(context.Context) (jetstream.KeyValueStatus, error) {
	return nil, k.answer()
}

func (k *notYetKV) Get(context.Context, string) (jetstream.KeyValueEntry, error) {
	return nil, k.answer()
}

func (k *notYetKV) Watch(context.Context, string, ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	return nil, k.answer()
}

func (k *notYetKV) WatchFiltered(context.Context, []string, ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	return nil, k.answer()
}

func (k *notYetKV) WatchAll(context.Context, ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	return nil, k.answer()
}

// Every read of a bucket OpenKV returns (Status, Get, the watches) asks
// again after "not found" just after the opening (here an opening an hour
// from now, so that the window outlasts the test however slow the
// machine), and not later.
func TestSettledKVReads(t *testing.T) {
	ctx := context.Background()
	reads := map[string]func(jetstream.KeyValue) error{
		"Status": func(kv jetstream.KeyValue) error { _, err := kv.Status(ctx); return err },
		"Get":    func(kv jetstream.KeyValue) error { _, err := kv.Get(ctx, "k"); return err },
		"Watch":  func(kv jetstream.KeyValue) error { _, err := kv.Watch(ctx, "k"); return err },
		"WatchFiltered": func(kv jetstream.KeyValue) error {
			_, err := kv.WatchFiltered(ctx, []string{"k"})
			return err
		},
		"WatchAll": func(kv jetstream.KeyValue) error { _, err := kv.WatchAll(ctx); return err },
	}
	for name, read := range reads {
		fresh := &notYetKV{left: 2}
		if err := read(&settledKV{KeyValue: fresh, opened: time.Now().Add(time.Hour)}); err != nil || fresh.left != 0 {
			t.Errorf("%s just after the opening: %v, %d answers left; want it asked until it answered", name, err, fresh.left)
		}
		old := &notYetKV{left: 2}
		if err := read(&settledKV{KeyValue: old, opened: time.Now().Add(-time.Hour)}); !errors.Is(err, jetstream.ErrStreamNotFound) || old.left != 1 {
			t.Errorf("%s an hour after the opening: %v, %d answers left; want \"not found\" at once", name, err, old.left)
		}
	}
}

// OpenKV returns its bucket as a settledKV, created or found.
func TestOpenKVSettles(t *testing.T) {
	js := testserver.JetStream(t)
	ctx := testserver.Context(t, 30*time.Second)
	for _, what := range []string{"created", "found"} {
		kv, err := OpenKV(ctx, js, jetstream.KeyValueConfig{Bucket: "S"}, true, time.Second, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := kv.(*settledKV); !ok || time.Since(s.opened) > time.Minute {
			t.Fatalf("%s bucket: OpenKV returned %T, want a settledKV opened now", what, kv)
		}
	}
}
