package positions

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
)

// Read reads one consumer as Check measures it: its info, the stored times
// of its positions, and its lag in messages (pending + ack pending) and in
// time (how far behind real time its ack floor is; 0 when caught up).
// Errors name the consumer and the stream (a missing one wraps
// jsutil.ErrNotFound).
func Read(ctx context.Context, js jetstream.JetStream, stream, consumer string, opts Options) (*Consumer, error) {
	opts = opts.withDefaults()
	r, err := openStream(ctx, js, stream, opts)
	if err != nil {
		return nil, err
	}
	return r.consumer(ctx, consumer)
}
