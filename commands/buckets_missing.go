package commands

import (
	"context"
	"errors"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go/jetstream"
)

// The rule for jsctl's own buckets (docs/exit-codes.md): a command that
// lists or summarises one treats a bucket that was never created as
// "nothing recorded yet" (an empty result, exit 0, and in text a line
// saying the bucket does not exist yet), because jsctl creates them on
// first use. A command that looks up one named thing (acks get KEY,
// snapshot show NAME) and an ack bucket named with --bucket other than
// the default still fail with exit 3 (not found): a typo must not look
// like an empty bucket.

// bucketMissing reports whether jsctl's bucket does not exist yet; an
// error to look it up counts as existing (the listing already worked).
func bucketMissing(ctx context.Context, js jetstream.JetStream, bucket string) bool {
	ok, err := jsutil.KVExists(ctx, js, bucket)
	return err == nil && !ok
}

// missingText is the text line for a listing of a bucket not created yet.
func missingText(what, bucket string) string {
	return "No " + what + ": bucket " + bucket + " does not exist yet (nothing recorded).\n"
}

// openList opens the ack bucket for a listing: the default bucket, when
// it does not exist yet, is returned as (nil, nil) (nothing recorded);
// any other missing bucket is an error (exit 3).
func (b acksBucketFlag) openList(ctx context.Context, env *Env, scope string) (*acks.Store, error) {
	st, err := b.openScope(ctx, env, scope)
	if err != nil && b.Bucket == acks.DefaultBucket && errors.Is(err, jsutil.ErrNotFound) {
		cl, cerr := env.Client(ctx)
		if cerr == nil && bucketMissing(ctx, cl.JS, b.Bucket) {
			return nil, nil
		}
	}
	return st, err
}
