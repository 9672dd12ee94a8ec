package jsutil

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

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

// KVHistory is kv.History(ctx, key) that honours ctx while it reads and
// stops its watch with StopWatch. A key with no entries is an error
// wrapping jetstream.ErrKeyNotFound, as with kv.History.
func KVHistory(ctx context.Context, kv jetstream.KeyValue, key string) ([]jetstream.KeyValueEntry, error) {
	var out []jetstream.KeyValueEntry
	err := readWatch(ctx, kv, key, func(e jetstream.KeyValueEntry) { out = append(out, e) }, jetstream.IncludeHistory())
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, jetstream.ErrKeyNotFound
	}
	return out, nil
}

// KVKeys lists the keys of kv's live entries (kv.ListKeys, without the
// wait StopWatch explains).
func KVKeys(ctx context.Context, kv jetstream.KeyValue) ([]string, error) {
	out := []string{}
	err := readWatch(ctx, kv, ">", func(e jetstream.KeyValueEntry) {
		if e.Operation() == jetstream.KeyValuePut {
			out = append(out, e.Key())
		}
	}, jetstream.IgnoreDeletes(), jetstream.MetaOnly())
	return out, err
}

// readWatch passes fn the entries a watch of filter finds before it is up
// to date.
func readWatch(ctx context.Context, kv jetstream.KeyValue, filter string, fn func(jetstream.KeyValueEntry), opts ...jetstream.WatchOpt) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := kv.Watch(ctx, filter, opts...)
	if err != nil {
		return err
	}
	defer StopWatch(w)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("the watch ended before it was up to date")
			}
			if e == nil {
				return nil
			}
			fn(e)
		}
	}
}
