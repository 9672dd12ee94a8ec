package jsutil

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// WatchKV starts kv.Watch(ctx, filter, opts...) and waits for the creation
// of its consumer no longer than timeout. nats.go bounds that request by
// ctx alone, or by five seconds when ctx has no deadline, whatever the
// JetStream handle's timeout: a user whom the permissions deny the
// create would wait all of it, unseen. The bound covers the creation
// only: the watch lives on until stop (which stops it as StopWatch does).
func WatchKV(ctx context.Context, kv jetstream.KeyValue, timeout time.Duration, filter string, opts ...jetstream.WatchOpt) (w jetstream.KeyWatcher, stop func(), err error) {
	wctx, cancel := context.WithCancel(ctx)
	timer := time.AfterFunc(timeout, cancel)
	w, err = kv.Watch(wctx, filter, opts...)
	if !timer.Stop() && ctx.Err() == nil {
		// The timer ended the wait (or fired as the answer came: the
		// watch's context is gone, so it could not recover from a gap).
		if w != nil {
			StopWatch(w)
		}
		cancel()
		return nil, nil, fmt.Errorf("watch %q of bucket %q: no answer to the creation of its consumer in %s: %w", filter, kv.Bucket(), timeout, context.DeadlineExceeded)
	}
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return w, func() { StopWatch(w); cancel() }, nil
}

// StopWatch stops a KV watch without waiting for the server. nats.go's
// Stop deletes the watch's ordered consumer with a request it waits up to
// five seconds for, whatever the caller's timeout: a user whom the
// permissions deny $JS.API.CONSUMER.DELETE (and who may still read the
// bucket) would wait all of it, unseen, after every read. The delete is a
// courtesy (the server removes an ordered consumer nobody listens to by
// itself), so it is sent in the background; it ends when the answer comes,
// the wait runs out or the connection closes.
func StopWatch(w jetstream.KeyWatcher) {
	go func() { _ = w.Stop() }()
}

// KVHistory is kv.History(ctx, key) that waits for its watch's consumer
// no longer than timeout (WatchKV), honours ctx while it reads and stops
// its watch with StopWatch. A key with no entries is an error wrapping
// jetstream.ErrKeyNotFound, as with kv.History.
func KVHistory(ctx context.Context, kv jetstream.KeyValue, timeout time.Duration, key string) ([]jetstream.KeyValueEntry, error) {
	var out []jetstream.KeyValueEntry
	err := readWatch(ctx, kv, timeout, key, func(e jetstream.KeyValueEntry) { out = append(out, e) }, jetstream.IncludeHistory())
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, jetstream.ErrKeyNotFound
	}
	return out, nil
}

// KVKeys lists the keys of kv's live entries (kv.ListKeys, without the
// waits WatchKV and StopWatch explain).
func KVKeys(ctx context.Context, kv jetstream.KeyValue, timeout time.Duration) ([]string, error) {
	out := []string{}
	err := readWatch(ctx, kv, timeout, ">", func(e jetstream.KeyValueEntry) {
		if e.Operation() == jetstream.KeyValuePut {
			out = append(out, e.Key())
		}
	}, jetstream.IgnoreDeletes(), jetstream.MetaOnly())
	return out, err
}

// readWatch passes fn the entries a watch of filter finds before it is up
// to date.
func readWatch(ctx context.Context, kv jetstream.KeyValue, timeout time.Duration, filter string, fn func(jetstream.KeyValueEntry), opts ...jetstream.WatchOpt) error {
	w, stop, err := WatchKV(ctx, kv, timeout, filter, opts...)
	if err != nil {
		return err
	}
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return Errorf(ErrConnection, "watch %q of bucket %q ended before it was up to date", filter, kv.Bucket())
			}
			if e == nil {
				return nil
			}
			fn(e)
		}
	}
}
