package jsutil

import (
	"context"
	"errors"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// refusingKV is a bucket whose calls end as soon as the server reports
// their request refused (see Refusals), with an ErrPermission error naming
// the refused subject, instead of waiting out their timeout: nats.go's KV
// calls send their requests (a direct or message get, a publish to the
// key's subject, the creation of a watch's consumer, the stream's info)
// on their own, and a refused request is never answered. Each call ends
// only on the refusal of its own request, so a refusal is blamed on the
// call that made it. Without a record of refusals in ctx (WithRefusals)
// the calls are nats.go's.
//
// Every bucket jsctl opens is one: OpenKV and OpenExistingKV return them,
// and TestKVOpenedThroughJsutil fails for code that opens a bucket
// another way.
type refusingKV struct {
	jetstream.KeyValue
	api string // the JetStream API prefix ("$JS.API.")
}

func newRefusingKV(kv jetstream.KeyValue, js jetstream.JetStream) jetstream.KeyValue {
	if kv == nil {
		return nil
	}
	return &refusingKV{KeyValue: kv, api: APIPrefix(js.Options())}
}

// OpenExistingKV opens the existing bucket (jetstream.ErrBucketNotFound
// when there is none) as OpenKV's buckets are: its calls, and the opening,
// end at once when the server refuses their request.
func OpenExistingKV(ctx context.Context, js jetstream.JetStream, bucket string) (jetstream.KeyValue, error) {
	info := APIPrefix(js.Options()) + "STREAM.INFO.KV_" + bucket
	wctx, stop := EndOnRefusal(ctx, info)
	kv, err := js.KeyValue(wctx, bucket)
	err = RequestError(js.Conn(), info, RefusedCause(wctx, err))
	stop()
	if err != nil {
		return nil, err
	}
	return newRefusingKV(kv, js), nil
}

// stream is the bucket's stream name.
func (k *refusingKV) stream() string { return "KV_" + k.Bucket() }

// reads match the requests of a get: a direct get (by key subject) or a
// message get of the bucket's stream.
func (k *refusingKV) reads(s string) bool {
	return strings.HasPrefix(s, k.api+"DIRECT.GET."+k.stream()+".") || s == k.api+"DIRECT.GET."+k.stream() ||
		s == k.api+"STREAM.MSG.GET."+k.stream()
}

// writes matches the publish of a write of key (the put subject ends with
// $KV.<bucket>.<key>, whatever the prefix a domain or mirror gives it).
func (k *refusingKV) writes(key string) func(string) bool {
	return func(s string) bool { return strings.HasSuffix(s, "$KV."+k.Bucket()+"."+key) }
}

// watches matches the creation of a watch's consumer.
func (k *refusingKV) watches(s string) bool {
	return strings.HasPrefix(s, k.api+"CONSUMER.CREATE."+k.stream()+".") || s == k.api+"CONSUMER.CREATE."+k.stream()
}

// call runs f with a context that ends when the server refuses a request
// match accepts, and returns f's error or that refusal.
func call(ctx context.Context, match func(string) bool, f func(ctx context.Context) error) error {
	wctx, stop := RefusalsOf(ctx).watchMatch(ctx, match)
	err := f(wctx)
	err = RefusedCause(wctx, err)
	stop()
	return err
}

func (k *refusingKV) Get(ctx context.Context, key string) (e jetstream.KeyValueEntry, err error) {
	err = call(ctx, k.reads, func(ctx context.Context) error { e, err = k.KeyValue.Get(ctx, key); return err })
	return e, err
}

func (k *refusingKV) GetRevision(ctx context.Context, key string, rev uint64) (e jetstream.KeyValueEntry, err error) {
	err = call(ctx, k.reads, func(ctx context.Context) error { e, err = k.KeyValue.GetRevision(ctx, key, rev); return err })
	return e, err
}

func (k *refusingKV) Put(ctx context.Context, key string, value []byte) (rev uint64, err error) {
	err = call(ctx, k.writes(key), func(ctx context.Context) error { rev, err = k.KeyValue.Put(ctx, key, value); return err })
	return rev, err
}

func (k *refusingKV) PutString(ctx context.Context, key string, value string) (rev uint64, err error) {
	return k.Put(ctx, key, []byte(value))
}

func (k *refusingKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (rev uint64, err error) {
	// nats.go's Create reads the key after a "wrong last sequence" answer
	// (to tell a deleted key from a live one): its get ends too.
	match := func(s string) bool { return k.writes(key)(s) || k.reads(s) }
	err = call(ctx, match, func(ctx context.Context) error { rev, err = k.KeyValue.Create(ctx, key, value, opts...); return err })
	return rev, err
}

func (k *refusingKV) Update(ctx context.Context, key string, value []byte, last uint64) (rev uint64, err error) {
	err = call(ctx, k.writes(key), func(ctx context.Context) error { rev, err = k.KeyValue.Update(ctx, key, value, last); return err })
	return rev, err
}

func (k *refusingKV) Delete(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	return call(ctx, k.writes(key), func(ctx context.Context) error { return k.KeyValue.Delete(ctx, key, opts...) })
}

func (k *refusingKV) Purge(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	return call(ctx, k.writes(key), func(ctx context.Context) error { return k.KeyValue.Purge(ctx, key, opts...) })
}

func (k *refusingKV) Status(ctx context.Context) (st jetstream.KeyValueStatus, err error) {
	info := k.api + "STREAM.INFO." + k.stream()
	err = call(ctx, func(s string) bool { return s == info }, func(ctx context.Context) error { st, err = k.KeyValue.Status(ctx); return err })
	return st, err
}

// watch starts a watch with a context that ends when the creation of its
// consumer is refused: nats.go keeps that context for the watch's life
// (it creates the consumer again after a gap), so the refusal's record is
// released only when the watch is stopped.
func (k *refusingKV) watch(ctx context.Context, start func(ctx context.Context) (jetstream.KeyWatcher, error)) (jetstream.KeyWatcher, error) {
	wctx, stop := RefusalsOf(ctx).watchMatch(ctx, k.watches)
	w, err := start(wctx)
	if err != nil {
		err = RefusedCause(wctx, err)
		stop()
		return nil, err
	}
	if cause := context.Cause(wctx); errors.Is(cause, ErrPermission) {
		stop()
		if w != nil {
			StopWatch(w)
		}
		return nil, cause
	}
	return &releasingWatcher{KeyWatcher: w, release: stop}, nil
}

func (k *refusingKV) Watch(ctx context.Context, keys string, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	return k.watch(ctx, func(ctx context.Context) (jetstream.KeyWatcher, error) { return k.KeyValue.Watch(ctx, keys, opts...) })
}

func (k *refusingKV) WatchFiltered(ctx context.Context, keys []string, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	return k.watch(ctx, func(ctx context.Context) (jetstream.KeyWatcher, error) {
		return k.KeyValue.WatchFiltered(ctx, keys, opts...)
	})
}

func (k *refusingKV) WatchAll(ctx context.Context, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	return k.watch(ctx, func(ctx context.Context) (jetstream.KeyWatcher, error) { return k.KeyValue.WatchAll(ctx, opts...) })
}

func (k *refusingKV) History(ctx context.Context, key string, opts ...jetstream.WatchOpt) (out []jetstream.KeyValueEntry, err error) {
	err = call(ctx, k.watches, func(ctx context.Context) error { out, err = k.KeyValue.History(ctx, key, opts...); return err })
	return out, err
}

func (k *refusingKV) Keys(ctx context.Context, opts ...jetstream.WatchOpt) (out []string, err error) {
	err = call(ctx, k.watches, func(ctx context.Context) error { out, err = k.KeyValue.Keys(ctx, opts...); return err })
	return out, err
}

// releasingWatcher releases the refusal record of its watch when stopped.
type releasingWatcher struct {
	jetstream.KeyWatcher
	release func()
}

func (w *releasingWatcher) Stop() error {
	err := w.KeyWatcher.Stop()
	w.release()
	return err
}
