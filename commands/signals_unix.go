//go:build unix

package commands

import (
	"errors"
	"os"
	"os/signal"
	"syscall"
)

// stopSignals stop a command: SIGINT (Ctrl-C), SIGTERM (a supervisor's
// stop) and SIGHUP (the terminal went away).
func stopSignals() []os.Signal { return []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP} }

// catchSIGPIPE makes a closed pipe on stdout (jsctl ... | head) fail writes
// with EPIPE instead of killing the process, so commands stop and clean up
// (the demo's store, an embedded server). A handler installed with Notify,
// unlike an ignored signal, is reset for child processes.
func catchSIGPIPE() { signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE) }

// brokenPipe reports whether err is a write to a pipe whose reader has
// gone.
func brokenPipe(err error) bool { return errors.Is(err, syscall.EPIPE) }
