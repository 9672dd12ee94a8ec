package jsutil

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DirectBatch sends a batched direct get on stream ($JS.API.DIRECT.GET.
// <stream>, the API prefix of js's domain added; body carries "batch",
// nats-server ≥ 2.11) and returns the messages of its reply in order: up to
// batch messages, each with the server's Nats-Sequence, Nats-Subject,
// Nats-Time-Stamp and Nats-Num-Pending headers next to its own, then the
// end-of-batch status message (Status 204, Nats-Num-Pending: matching
// messages left after the batch). A reply that is a status alone (404 none
// matches, 408 a request the server refused) is returned as that one
// message. A server that does not know batches (2.10) answers one message
// without Nats-Num-Pending and no end of batch: it is returned alone, and
// the caller tells it by that header. The stream needs allow_direct (no
// responders otherwise).
//
// Several messages answer one request, so it is sent on an inbox of its
// own rather than with a request; the retry rule is Request's (the whole
// batch is asked again when no end came within the timeout).
func DirectBatch(ctx context.Context, js jetstream.JetStream, stream string, body []byte, o RequestOptions) ([]*nats.Msg, error) {
	var msgs []*nats.Msg
	err := retry(ctx, js, "DIRECT.GET."+stream, o, func(ctx context.Context, nc *nats.Conn, subject string, timeout time.Duration) error {
		var err error
		msgs, err = batchOnce(ctx, nc, subject, body, timeout)
		return err
	})
	if err != nil {
		return nil, err
	}
	return msgs, nil
}

// batchOnce sends one batched request and reads its reply until its end,
// waiting at most timeout for all of it.
func batchOnce(ctx context.Context, nc *nats.Conn, subject string, body []byte, timeout time.Duration) ([]*nats.Msg, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe() //nolint:errcheck // the inbox is ours alone
	if err := nc.PublishRequest(subject, inbox, body); err != nil {
		return nil, err
	}
	var msgs []*nats.Msg
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			if refused := refusedCause(ctx, err); refused != err {
				return nil, refused
			}
			if errors.Is(err, context.DeadlineExceeded) && len(msgs) == 0 {
				return nil, nats.ErrTimeout
			}
			return nil, err
		}
		status := m.Header.Get("Status")
		if status == "503" && len(msgs) == 0 && len(m.Data) == 0 {
			return nil, nats.ErrNoResponders
		}
		msgs = append(msgs, m)
		if status != "" || (len(msgs) == 1 && m.Header.Get("Nats-Num-Pending") == "") {
			return msgs, nil
		}
	}
}
