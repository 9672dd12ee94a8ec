package jsutil

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
)

// Consumer opens the consumer's handle (reading its info) through
// nats.go, under the request layer's retry rule: a consumer without a
// leader for now (just created on a cluster, an election) does not
// answer, and is asked again within ctx's retry budget (WhileUnanswered,
// RetryFor). A refusal is classed ErrPermission (RequestError).
func Consumer(ctx context.Context, js jetstream.JetStream, stream, consumer string) (jetstream.Consumer, error) {
	var cons jetstream.Consumer
	err := WhileUnanswered(ctx, RetryFor(ctx), func() error {
		var err error
		cons, err = js.Consumer(ctx, stream, consumer)
		return RequestError(js.Conn(), APIPrefix(js.Options())+"CONSUMER.INFO."+stream+"."+consumer, err)
	})
	return cons, err
}

// Stream opens the stream's handle (reading its info once) through
// nats.go, under the same retry rule as Consumer.
func Stream(ctx context.Context, js jetstream.JetStream, stream string) (jetstream.Stream, error) {
	var st jetstream.Stream
	err := WhileUnanswered(ctx, RetryFor(ctx), func() error {
		var err error
		st, err = js.Stream(ctx, stream)
		return RequestError(js.Conn(), APIPrefix(js.Options())+"STREAM.INFO."+stream, err)
	})
	return st, err
}
