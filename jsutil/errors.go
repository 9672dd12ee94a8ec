// Package jsutil is the jsctl library: connections (flags, NATS contexts, an
// embedded server), time parsing, seek, consumer reset and idempotent
// processing for NATS JetStream.
//
// Functions take a context first and return errors that wrap the sentinels
// below, so callers can classify them with errors.Is.
package jsutil

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error returned by this package that belongs to one
// of these classes wraps the matching sentinel.
var (
	// ErrBadInput marks input that cannot be used as given (an unreadable
	// time, a flag combination that makes no sense, a malformed file).
	ErrBadInput = errors.New("bad input")
	// ErrNotFound marks a stream, consumer, message, bucket or record that
	// does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConnection marks a server that cannot be reached or did not answer
	// in time.
	ErrConnection = errors.New("connection failed")
	// ErrConflict marks a state that forbids the change: a busy consumer, a
	// lost compare-and-set, a plan that is out of date.
	ErrConflict = errors.New("conflict")
	// ErrCancelled marks work stopped by the user (a signal, a declined
	// confirmation).
	ErrCancelled = errors.New("cancelled")
	// ErrPermission marks a request the server refused for lack of
	// permission.
	ErrPermission = errors.New("permission denied")
)

// classed is an error that belongs to one of the sentinel classes while
// keeping its own message (the class is not repeated in the text).
type classed struct {
	class error
	err   error
}

func (e *classed) Error() string { return e.err.Error() }

func (e *classed) Unwrap() []error { return []error{e.err, e.class} }

// Classify marks err as belonging to class without changing its message.
// It returns nil when err is nil.
func Classify(class, err error) error {
	if err == nil {
		return nil
	}
	return &classed{class: class, err: err}
}

// Errorf formats an error like fmt.Errorf and marks it as belonging to class.
func Errorf(class error, format string, args ...any) error {
	return Classify(class, fmt.Errorf(format, args...))
}
