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
	class, plain := classifyAPIError(err)
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

// classifyAPIError returns the class of err (nil when none fits) and, where
// the raw text is unhelpful, plain words for it.
func classifyAPIError(err error) (error, string) {
	for _, c := range []error{ErrBadInput, ErrNotFound, ErrConnection, ErrConflict, ErrCancelled, ErrPermission} {
		if errors.Is(err, c) {
			return nil, ""
		}
	}
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return ErrNotFound, "stream not found"
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		return ErrNotFound, "consumer not found"
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return ErrNotFound, "message not found"
	case errors.Is(err, jetstream.ErrBucketNotFound):
		return ErrNotFound, "bucket not found"
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return ErrNotFound, "key not found"
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		return ErrConnection, "jetstream is not enabled on the server"
	case errors.Is(err, nats.ErrPermissionViolation), strings.Contains(strings.ToLower(err.Error()), "permissions violation"):
		return ErrPermission, "the server denied permission"
	case errors.Is(err, context.Canceled):
		return ErrCancelled, "cancelled"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return ErrConnection, "no answer from the server in time"
	case errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrNoStreamResponse):
		return ErrConnection, "no jetstream server answered"
	case errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrDisconnected):
		return ErrConnection, "connection lost"
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.Code {
		case 404:
			return ErrNotFound, ""
		case 403:
			return ErrPermission, ""
		case 409:
			return ErrConflict, ""
		case 400:
			return ErrBadInput, ""
		}
	}
	return nil, ""
}
