package commands

import (
	"errors"

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
  5  conflict (consumer busy, plan out of date, compare-and-set lost, refusal without --force)
  6  cancelled (interrupted, or a confirmation declined)
  7  permission denied by the server`

// exitCode maps an error to its exit code. This is the only place that does.
func exitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
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
