package commands

import (
	"errors"
	"io"

	"github.com/alecthomas/kong"
	"github.com/jsctl/jsctl/jsutil"
)

// Exit codes. They are documented in README.md and in `jsctl --help`; keep
// all three in step.
const (
	ExitOK         = 0
	ExitFailure    = 1
	ExitUsage      = 2
	ExitNotFound   = 3
	ExitConnection = 4
	ExitConflict   = 5
	ExitCancelled  = 6
	ExitPermission = 7
)

// exitCodesHelp is appended to the top-level help.
const exitCodesHelp = `Exit codes:
  0  success (an empty result is success)
  1  failure
  2  usage or bad input (flags, times, files)
  3  not found (stream, consumer, message, bucket, record)
  4  connection failure or timeout
  5  conflict (consumer busy, plan out of date, compare-and-set lost,
     refusal without --force)
  6  cancelled (interrupted, or a confirmation declined)
  7  permission denied by the server, or (--audit required) the audit event cannot be written
  Two commands differ:
  consumer check follows the monitoring convention: 0 OK, 1 WARNING, 2 CRITICAL,
    3 UNKNOWN (any error, bad usage included);
  consume stopped by SIGINT/SIGTERM exits as if it had ended by itself: 0, or 1
    when a message failed in the run (a stop is how it normally ends, not a
    cancel).`

// ExitStatus is an error that carries its own exit code, for a command
// whose codes follow another convention than the table above (consumer
// check: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN). With Err nil it is a
// status, not an error: nothing is printed on stderr.
type ExitStatus struct {
	Code int
	Err  error
}

func (e *ExitStatus) Error() string {
	if e.Err == nil {
		return ""
	}
	return e.Err.Error()
}

func (e *ExitStatus) Unwrap() error { return e.Err }

// errorText is what Run prints for err ("" for a bare ExitStatus).
func errorText(err error) string {
	var st *ExitStatus
	if errors.As(err, &st) && st.Err == nil {
		return ""
	}
	return err.Error()
}

// usageExitCoder is a command whose usage errors exit with a code of its
// own instead of ExitUsage.
type usageExitCoder interface{ usageExitCode() int }

// usageExitCode is the exit code of a command line that does not parse or
// validate: ExitUsage, or the selected command's own code.
func usageExitCode(kctx *kong.Context) int {
	if kctx == nil {
		return ExitUsage
	}
	if n := kctx.Selected(); n != nil && n.Target.IsValid() && n.Target.CanAddr() {
		if c, ok := n.Target.Addr().Interface().(usageExitCoder); ok {
			return c.usageExitCode()
		}
	}
	return ExitUsage
}

// usageStatusPrinter is a command that prints a status line on standard
// output for a command line that does not parse or validate (consumer check:
// monitoring systems show stdout, not stderr).
type usageStatusPrinter interface {
	usageStatus(stdout io.Writer, err error)
}

// usageFailed ends a command line that does not parse or validate: the
// selected command's status line, if it has one, and its exit code.
func usageFailed(kctx *kong.Context, stdout io.Writer, err error) int {
	if kctx != nil {
		if n := kctx.Selected(); n != nil && n.Target.IsValid() && n.Target.CanAddr() {
			if c, ok := n.Target.Addr().Interface().(usageStatusPrinter); ok {
				c.usageStatus(stdout, err)
			}
		}
	}
	return usageExitCode(kctx)
}

// exitCode maps an error to its exit code. This is the only place that does.
func exitCode(err error) int {
	var st *ExitStatus
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &st):
		return st.Code
	case errors.Is(err, jsutil.ErrAudit):
		return ExitPermission
	case errors.Is(err, jsutil.ErrBadInput):
		return ExitUsage
	case errors.Is(err, jsutil.ErrCancelled):
		return ExitCancelled
	case errors.Is(err, jsutil.ErrPermission):
		return ExitPermission
	case errors.Is(err, jsutil.ErrNotFound):
		return ExitNotFound
	case errors.Is(err, jsutil.ErrConflict):
		return ExitConflict
	case errors.Is(err, jsutil.ErrConnection):
		return ExitConnection
	}
	return ExitFailure
}
