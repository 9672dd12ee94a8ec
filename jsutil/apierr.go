package jsutil

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Wrap describes a failed JetStream call: it prefixes err with the action
// (formatted from format and args, e.g. `get stream "ORDERS"`), translates
// raw API errors into plain words, and classes the result (not found,
// permission, connection, conflict) so errors.Is works on it.
// It returns nil when err is nil.
func Wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	what := fmt.Sprintf(format, args...)
	plain, class := classifyAPIError(err)
	if class == nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if plain != "" {
		return Classify(class, &plainErr{msg: what + ": " + plain, err: err})
	}
	return Classify(class, fmt.Errorf("%s: %w", what, err))
}

// plainErr replaces the text of a raw API error with plain words while
// keeping the raw error reachable by errors.Is.
type plainErr struct {
	msg string
	err error
}

func (e *plainErr) Error() string { return e.msg }
func (e *plainErr) Unwrap() error { return e.err }

// classifyAPIError returns, where the raw text is unhelpful, plain words
// for err, and its class (nil when none fits).
func classifyAPIError(err error) (string, error) {
	for _, c := range []error{ErrBadInput, ErrNotFound, ErrConnection, ErrConflict, ErrCancelled, ErrPermission} {
		if errors.Is(err, c) {
			return "", nil
		}
	}
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return "stream not found", ErrNotFound
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		return "consumer not found", ErrNotFound
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return "message not found", ErrNotFound
	case errors.Is(err, jetstream.ErrBucketNotFound):
		return "bucket not found", ErrNotFound
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return "key not found", ErrNotFound
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		return "jetstream is not enabled on the server", ErrConnection
	case errors.Is(err, nats.ErrPermissionViolation), strings.Contains(strings.ToLower(err.Error()), "permissions violation"):
		return "the server denied permission", ErrPermission
	case errors.Is(err, context.Canceled):
		return "cancelled", ErrCancelled
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return "no answer from the server in time", ErrConnection
	case errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrNoStreamResponse):
		return "no jetstream server answered", ErrConnection
	case errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrDisconnected):
		return "connection lost", ErrConnection
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.Code {
		case 404:
			return "", ErrNotFound
		case 403:
			return "", ErrPermission
		case 409:
			return "", ErrConflict
		case 400:
			return "", ErrBadInput
		}
	}
	return "", nil
}
