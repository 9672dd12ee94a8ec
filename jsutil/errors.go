// Package jsutil is the shared vocabulary of the jsctl library for NATS
// JetStream: connections (flags, NATS contexts), time parsing, error
// classes, KV bucket and key helpers, and the one request layer: Request
// and RequestMsg send every JetStream API request jsctl writes by hand,
// decode its API error and apply the retry rule (Retryable) within the
// retry budget a command puts in the context (WithRetry); Retrier paces
// the loops that follow a lost reply up. The features are packages of
// their own: jsutil/seek (time to sequence, timelines), jsutil/reset
// (consumer reset, recover, history), jsutil/acks (idempotent processing
// with records in a KV bucket), jsutil/positions (pause, check and
// snapshots of consumer positions), jsutil/audit (the audit trail: one
// event per change in the stream JSCTL_AUDIT) and jsutil/embedded (an
// in-process server, the only package that compiles nats-server).
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
	// ErrAudit marks a change refused (or a change made) under --audit
	// required whose audit event cannot be (or was not) written to the
	// audit stream: exit 7, like a permission the server denies.
	ErrAudit = errors.New("audit event not writable")
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
