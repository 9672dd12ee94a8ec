//go:build windows

package commands

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/windows"
)

// stopSignals stop a command. Go delivers Ctrl-C and Ctrl-Break as
// os.Interrupt (the same stop as SIGINT on Unix), and the console being
// closed, the user logging off and the system shutting down as
// syscall.SIGTERM.
func stopSignals() []os.Signal { return []os.Signal{os.Interrupt, syscall.SIGTERM} }

// catchSIGPIPE: Windows has no SIGPIPE; a write to a closed pipe fails.
func catchSIGPIPE() {}

// brokenPipe reports whether err is a write to a pipe whose reader has
// gone.
func brokenPipe(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, windows.ERROR_BROKEN_PIPE) || errors.Is(err, windows.ERROR_NO_DATA)
}
