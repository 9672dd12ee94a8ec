package commands

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/reset"
)

// What jsctl says on stderr while it waits, so that a wait is never silent:
//
//   - A request left unanswered (a server that died or restarts, a lost
//     connection): the library's retry loops report it (jsutil.WithRetry)
//     and a plain line says what jsctl does about it, "no answer from the
//     server; asking again for up to 27s (Ctrl-C to stop)", at most every
//     waitNoticeEvery, also with --json (stdout stays JSON). A read of a
//     bucket jsctl has just found that the server answers "stream not
//     found" is asked again the same way, and said so ("bucket ... was just
//     found, but a server does not know its stream yet; ...").
//   - The drain of --pause (reset.Options.Drain): on a terminal without
//     --json a live line, redrawn in place and cleared when the wait ends,
//     "waiting for 1 delivery of "billing" on "ORDERS" to be acknowledged,
//     12s of 30s"; elsewhere without --json that line is printed plainly when
//     the wait starts and then every waitNoticeEvery; with --json nothing.
//     The wait's outcome is stated once, in the change's pause line.
//   - While a full-screen UI owns the terminal (the picker), nothing is
//     written to stderr: every line goes to the UI instead (noticesTo),
//     which shows it on its status line.

// waitNoticeEvery is how often a plain line repeats while a wait goes on.
const waitNoticeEvery = 10 * time.Second

// waitLines draws those lines; it is safe for concurrent use. With
// --log-format json the plain lines are records with fields and nothing is
// drawn in place.
type waitLines struct {
	mu    sync.Mutex
	w     io.Writer
	log   *slog.Logger
	live  bool // draw the drain in place (a terminal, without --json or --log-format json)
	quiet bool // no drain lines at all (--json)
	drawn bool // a live line is on the screen
	// last is when each kind of plain line was last printed ("" for
	// unanswered requests, else the consumer).
	last map[string]time.Time
	// to, when set, gets each line instead of w, every time (see
	// noticesTo).
	to func(string)
}

// noticesTo sends what jsctl would say on stderr to f until restore is
// called: the wait lines, and anything written to env.Stderr (a full
// line at a time). A UI that owns the terminal shows them; progress bars
// are not drawn meanwhile.
func (e *Env) noticesTo(f func(string)) (restore func()) {
	l := e.waitLines()
	l.mu.Lock()
	l.to = f
	l.mu.Unlock()
	stderr := e.Stderr
	e.notices = f
	e.Stderr = &noticeWriter{to: f}
	return func() {
		l.mu.Lock()
		l.to = nil
		l.mu.Unlock()
		e.notices, e.Stderr = nil, stderr
	}
}

// noticeWriter hands each line written to it to a notice callback,
// without the "jsctl: " prefix and with terminal controls removed.
type noticeWriter struct {
	mu   sync.Mutex
	to   func(string)
	part []byte
}

func (w *noticeWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.part = append(w.part, b...)
	for {
		i := bytes.IndexAny(w.part, "\r\n")
		if i < 0 {
			return len(b), nil
		}
		line := strings.TrimPrefix(TermSafe(strings.TrimSpace(string(w.part[:i]))), "jsctl: ")
		w.part = w.part[i+1:]
		if line != "" {
			w.to(line)
		}
	}
}

func (e *Env) waitLines() *waitLines {
	if e.waits == nil {
		e.waits = &waitLines{w: e.Stderr, log: e.Logger(), live: e.StderrIsTerminal && !e.Globals.JSON && !e.logJSON(), quiet: e.Globals.JSON, last: map[string]time.Time{}}
	}
	return e.waits
}

// unanswered is the callback of jsutil.WithRetry.
func (l *waitLines) unanswered(u jsutil.Unanswered) {
	left := time.Until(u.Until).Round(time.Second)
	if left < time.Second {
		return // it gives up now: the error says so
	}
	until := slog.String("until", u.Until.UTC().Format(time.RFC3339Nano))
	if u.Bucket != "" {
		l.plain("", fmt.Sprintf("bucket %q was just found, but a server does not know its stream yet; asking again for up to %s (Ctrl-C to stop)", u.Bucket, left), until, slog.String("bucket", u.Bucket))
		return
	}
	attrs := []slog.Attr{until}
	if u.Err != nil {
		attrs = append(attrs, slog.String("error", u.Err.Error()))
	}
	l.plain("", fmt.Sprintf("no answer from the server; asking again for up to %s (Ctrl-C to stop)", left), attrs...)
}

// drain is the callback of reset.Options.Drain.
func (l *waitLines) drain(d reset.Drain) {
	if l.quiet {
		return
	}
	key := d.Stream + "\x00" + d.Consumer
	msg := fmt.Sprintf("waiting for %s of %q on %q to be acknowledged, %s of %s",
		plural(d.Unacked, "delivery", "deliveries"), d.Consumer, d.Stream, d.Waited.Truncate(time.Second), d.Timeout)
	if !l.live {
		if d.Outcome == "" {
			l.plain(key, msg, slog.String("stream", d.Stream), slog.String("consumer", d.Consumer),
				slog.Int("unacked", d.Unacked), slog.Float64("waited_seconds", d.Waited.Seconds()), slog.Float64("timeout_seconds", d.Timeout.Seconds()))
		} else {
			l.mu.Lock()
			delete(l.last, key)
			l.mu.Unlock()
		}
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.to != nil {
		if d.Outcome == "" {
			l.to(msg)
		}
		return
	}
	if d.Outcome != "" {
		l.clear()
		return
	}
	fmt.Fprintf(l.w, "\r\033[K%s", msg)
	l.drawn = true
}

// plain prints msg on a line of its own (a record with attrs in json),
// unless a line of the same key was printed less than waitNoticeEvery
// ago.
func (l *waitLines) plain(key, msg string, attrs ...slog.Attr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.to != nil {
		l.to(msg)
		return
	}
	if t, ok := l.last[key]; ok && time.Since(t) < waitNoticeEvery {
		return
	}
	l.last[key] = time.Now()
	l.clear()
	l.log.LogAttrs(context.Background(), levelNotice, msg, attrs...)
}

// clear removes the live line, if one is drawn.
func (l *waitLines) clear() {
	if l.drawn {
		fmt.Fprint(l.w, "\r\033[K")
		l.drawn = false
	}
}

// waitOptions hands the library the retry budget (--retry-for) and the
// drain callback.
func (e *Env) waitOptions(o *reset.Options) {
	o.Settle, o.Drain = e.Globals.RetryFor, e.waitLines().drain
}

// drainText says how the wait for a paused consumer's deliveries ended:
// one outcome.
func drainText(ps *reset.PauseStep) string {
	took := time.Duration(ps.DrainNS).Round(time.Millisecond)
	left := plural(ps.Unacked, "delivery", "deliveries")
	switch ps.Drain {
	case reset.DrainTimedOut:
		return fmt.Sprintf("timed out after %s with %s unacknowledged", took, left)
	case reset.DrainCancelled:
		return fmt.Sprintf("cancelled after %s, waiting for %s", took, left)
	case reset.DrainFailed:
		return fmt.Sprintf("the wait for its deliveries failed after %s", took)
	}
	return fmt.Sprintf("its deliveries settled in %s", took)
}
