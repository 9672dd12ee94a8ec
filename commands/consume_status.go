package commands

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/schollz/progressbar/v3"
)

// consumeStatus is consume's live status line on stderr: counts, rate,
// elapsed time, and the consumer's pending count and lag, refreshed about
// once a second. It exists only when stderr is a terminal, --json is off
// and stderr is not written as JSON (--log-format json), and --progress is
// on; otherwise every method does nothing. Output
// written through its writer (the command's output, jsctl's warnings)
// clears the line first and draws it again after.
//
// The line is a github.com/schollz/progressbar/v3 bar of unknown length
// (a spinner), as commands/progress.go uses for long work.
type consumeStatus struct {
	mu      sync.Mutex // the counts
	outMu   sync.Mutex // drawing and the writes around it
	bar     *progressbar.ProgressBar
	start   time.Time
	sum     acks.Summary // counts so far, from results
	failing map[uint64]bool
	pending uint64
	lag     uint64
	// width is the terminal's width in columns (terminalWidth), asked at
	// each redraw so that a resized window is followed.
	width func() int
	stop  chan struct{}
	done  chan struct{}
}

// newConsumeStatus starts the status line, or returns one that draws
// nothing.
func newConsumeStatus(env *Env, enabled bool) *consumeStatus {
	s := &consumeStatus{start: time.Now(), failing: map[uint64]bool{}}
	if !enabled || !env.StderrIsTerminal || env.Globals.JSON || env.logJSON() {
		return s
	}
	stderr := unwrapStderr(env.Stderr) // the terminal itself, for its width
	s.width = func() int { return terminalWidth(stderr) }
	s.bar = progressbar.NewOptions(-1,
		progressbar.OptionSetWriter(env.Stderr),
		progressbar.OptionSpinnerType(14),
		// No drawing goroutine of the library's own: it would race with
		// the clears around the command's output. The line is drawn when
		// it changes (about once a second, and after each write).
		progressbar.OptionSetSpinnerChangeInterval(0),
		progressbar.OptionSetElapsedTime(false),
		progressbar.OptionClearOnFinish(),
	)
	return s
}

// watch refreshes the consumer's pending count every second until close.
func (s *consumeStatus) watch(ctx context.Context, cons jetstream.Consumer) {
	if s.bar == nil {
		return
	}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			if info, err := cons.Info(ctx); err == nil {
				s.mu.Lock()
				s.pending, s.lag = info.NumPending, info.NumPending+uint64(max(info.NumAckPending, 0))
				s.mu.Unlock()
			}
			s.redraw()
			select {
			case <-s.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// add counts one result.
func (s *consumeStatus) add(r acks.Result) {
	if s.bar == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.Action {
	case acks.Processed:
		s.sum.Processed++
		delete(s.failing, r.Seq)
	case acks.Duplicate:
		s.sum.Duplicates++
		delete(s.failing, r.Seq)
	case acks.Failed:
		s.failing[r.Seq] = true
	case acks.Busy:
		s.sum.Busy++
	}
}

// line is the status text.
func (s *consumeStatus) line() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	elapsed := time.Since(s.start)
	done := s.sum.Processed + s.sum.Duplicates
	width := statusWidthDefault
	if s.width != nil {
		width = s.width()
	}
	return statusLine(statusFields{
		Processed: s.sum.Processed, Duplicates: s.sum.Duplicates, Failed: len(s.failing), Busy: s.sum.Busy,
		Rate: float64(done) / max(elapsed.Seconds(), 0.001), Elapsed: elapsed,
		Pending: s.pending, Lag: s.lag,
	}, width)
}

func (s *consumeStatus) redraw() {
	if s.bar == nil {
		return
	}
	s.outMu.Lock()
	defer s.outMu.Unlock()
	s.bar.Describe(s.line())
}

// close stops refreshing and clears the line.
func (s *consumeStatus) close() {
	if s.bar == nil {
		return
	}
	if s.stop != nil {
		close(s.stop)
		<-s.done
	}
	s.outMu.Lock()
	defer s.outMu.Unlock()
	_ = s.bar.Clear()
}

// writer wraps w so that a write clears the status line and draws it again
// after.
func (s *consumeStatus) writer(w io.Writer) io.Writer {
	if s.bar == nil {
		return w
	}
	return writerFunc(func(b []byte) (int, error) {
		s.outMu.Lock()
		defer s.outMu.Unlock()
		_ = s.bar.Clear()
		n, err := w.Write(b)
		s.bar.Describe(s.line())
		return n, err
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
