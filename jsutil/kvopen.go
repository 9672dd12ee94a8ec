package jsutil

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultSettle is how long OpenKV keeps sending a request that goes
// unanswered, unless its caller says otherwise.
const DefaultSettle = 30 * time.Second

// OpenKV opens the KV bucket cfg.Bucket and, with create, creates it from
// cfg when it does not exist (a bucket someone else created meanwhile is
// opened). Each request waits at most timeout. A request left unanswered
// (its reply lost, a server restarting, a cluster without a meta leader or
// without a peer to place a replica on, for now) is sent again until
// settle has passed or ctx ends: on a loaded cluster the first create of a
// replicated bucket can outlast one request timeout, and creating a bucket
// that exists with the same configuration is harmless. A request the server's permissions refuse is not sent
// again; its error is classed ErrPermission (see RequestError). Without
// create, a missing bucket is jetstream.ErrBucketNotFound.
//
// The bucket it returns reads through settledKV: "stream not found" just
// after the bucket was found is asked again.
func OpenKV(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig, create bool, timeout, settle time.Duration) (jetstream.KeyValue, error) {
	var kv jetstream.KeyValue
	err := WhileUnanswered(ctx, settle, func() error {
		var err error
		kv, err = openKV(ctx, js, cfg, create, timeout)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &settledKV{KeyValue: kv, opened: time.Now()}, nil
}

// SettleAfterOpen is how long after OpenKV found a bucket a read of it
// that the server answers "stream not found" is asked again.
const SettleAfterOpen = 5 * time.Second

// settledKV is a bucket OpenKV has just found. Right after a replicated
// bucket is created (by this process or another), a server of the cluster
// may not know its stream yet and answer "not found" for a moment, though
// opening the bucket has just found it: three consume processes started
// together on a 3-node cluster saw it on their first read. Its reads
// (Status, Get, the watches) ask again after that answer within
// SettleAfterOpen of the opening (and within the retry budget, told to
// ctx's callback as an Unanswered naming the bucket, see WithRetry);
// later, "not found" is final at once.
type settledKV struct {
	jetstream.KeyValue
	opened time.Time
}

func (k *settledKV) Status(ctx context.Context) (st jetstream.KeyValueStatus, err error) {
	err = k.settling(ctx, func() error { st, err = k.KeyValue.Status(ctx); return err })
	return st, err
}

func (k *settledKV) Get(ctx context.Context, key string) (e jetstream.KeyValueEntry, err error) {
	err = k.settling(ctx, func() error { e, err = k.KeyValue.Get(ctx, key); return err })
	return e, err
}

func (k *settledKV) Watch(ctx context.Context, keys string, opts ...jetstream.WatchOpt) (w jetstream.KeyWatcher, err error) {
	err = k.settling(ctx, func() error { w, err = k.KeyValue.Watch(ctx, keys, opts...); return err })
	return w, err
}

func (k *settledKV) WatchFiltered(ctx context.Context, keys []string, opts ...jetstream.WatchOpt) (w jetstream.KeyWatcher, err error) {
	err = k.settling(ctx, func() error { w, err = k.KeyValue.WatchFiltered(ctx, keys, opts...); return err })
	return w, err
}

func (k *settledKV) WatchAll(ctx context.Context, opts ...jetstream.WatchOpt) (w jetstream.KeyWatcher, err error) {
	err = k.settling(ctx, func() error { w, err = k.KeyValue.WatchAll(ctx, opts...); return err })
	return w, err
}

func (k *settledKV) settling(ctx context.Context, f func() error) error {
	return settleAfter(ctx, k.Bucket(), k.opened, f)
}

// settleAfter calls f, and again while it fails with "stream not found"
// within SettleAfterOpen of opened (the opening of bucket) and ctx's retry
// budget, saying so to ctx's callback before each new attempt.
func settleAfter(ctx context.Context, bucket string, opened time.Time, f func() error) error {
	r := RetryUntil(time.Until(opened.Add(SettleAfterOpen)))
	for {
		err := f()
		if err == nil || !(errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, nats.ErrStreamNotFound)) ||
			r.Expired() || !askAgain(ctx, r.Deadline, Unanswered{Err: err, Bucket: bucket}) || !r.Again(ctx, err) {
			return err
		}
	}
}

// WhileUnanswered calls f, and calls it again while it fails with an
// error the retry rule sends again (Retryable: no answer that decides
// anything, a transient server error), until settle has passed or ctx
// ends. It returns f's last error. f should class a refusal with
// RequestError, so that a denied request is not sent again. Each time it
// is about to call f again it says so through ctx's callback (see
// WithRetry).
func WhileUnanswered(ctx context.Context, settle time.Duration, f func() error) error {
	r := RetryUntil(settle)
	for {
		err := f()
		if err == nil || !Retryable(err) || !r.Again(ctx, err) {
			return err
		}
	}
}

// openKV is one attempt of OpenKV.
func openKV(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig, create bool, timeout time.Duration) (jetstream.KeyValue, error) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	info := APIPrefix(js.Options()) + "STREAM.INFO.KV_" + cfg.Bucket
	wctx, stop := EndOnRefusal(rctx, info)
	kv, err := js.KeyValue(wctx, cfg.Bucket)
	err = RequestError(js.Conn(), info, RefusedCause(wctx, err))
	stop()
	if !create || !errors.Is(err, jetstream.ErrBucketNotFound) {
		return newRefusingKV(kv, js), err
	}
	createSubj := APIPrefix(js.Options()) + "STREAM.CREATE.KV_" + cfg.Bucket
	wctx, stop = EndOnRefusal(rctx, createSubj)
	kv, err = js.CreateKeyValue(wctx, cfg)
	err = RefusedCause(wctx, err)
	stop()
	if errors.Is(err, jetstream.ErrBucketExists) {
		wctx, stop = EndOnRefusal(rctx, info)
		kv, err = js.KeyValue(wctx, cfg.Bucket)
		err = RefusedCause(wctx, err)
		stop()
		return newRefusingKV(kv, js), RequestError(js.Conn(), info, err)
	}
	return newRefusingKV(kv, js), RequestError(js.Conn(), createSubj, err)
}
