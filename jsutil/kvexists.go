package jsutil

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// KVExists reports whether the KV bucket exists. jsctl's own buckets are
// created on first use, so commands that list them say "does not exist
// yet" rather than "empty" when it does not.
func KVExists(ctx context.Context, js jetstream.JetStream, bucket string) (bool, error) {
	_, err := OpenExistingKV(ctx, js, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return false, nil
	}
	if err != nil {
		return false, Wrap(err, "look up KV bucket %q", bucket)
	}
	return true, nil
}
