package commands

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jsctl/jsctl/jsutil"
)

// jsctl's standard error for people and for log pipelines (--log-format).
//
// Every line jsctl writes to stderr goes through one stderrLog (Env.Stderr):
//   - text (the default): jsctl's lines pass as they are, with the
//     credentials of the connection masked (maskSecrets);
//   - json: each line becomes one JSON object made by log/slog's JSON
//     handler: "time" (RFC 3339, UTC), "level" (ERROR for "jsctl: error:",
//     WARN for "warning:" and "note:", else INFO), "msg" (the text without
//     "jsctl: " and its level word) and, where the code that writes it
//     says more (consume's lines, the waits), fields such as "stream",
//     "consumer", "seq", "key". Credentials are masked in every string.
//     Progress bars and live status lines are not drawn (progress.go,
//     consume_status.go, waits.go).
//
// A handler's output (consume, acks retry) is the handler's own: in text
// mode it passes unchanged; in json mode each line becomes an object with
// "source": "handler", "stream": "stdout" or "stderr" and the message's
// "seq" (a batch's "first_seq", "last_seq" and "batch_size") — see
// handlerWriters.

// The values of --log-format.
const (
	logFormatText = "text"
	logFormatJSON = "json"
)

// levelNotice is a warning whose text form has no "warning:" word (a
// failed message, a wait): WARN in json.
const levelNotice = slog.LevelWarn - 1

// maxLogLine bounds one handler output line in json mode: a longer line
// is cut into records of this size, each but the last marked "partial".
const maxLogLine = 64 << 10

// stderrLog is jsctl's standard error; see above. It is safe for
// concurrent use.
type stderrLog struct {
	w       io.Writer // the process's standard error
	mu      sync.Mutex
	json    bool
	secrets func() []string // --password, --token and the like
	h       slog.Handler    // json: log/slog's JSON handler over w
}

// newStderrLog wraps w in the format that preScan found in args (the
// parsed --log-format is set later with setFormat, before any command
// runs).
func newStderrLog(w io.Writer, args []string) *stderrLog {
	format, secrets := preScan(args)
	s := &stderrLog{w: w, secrets: func() []string { return secrets }}
	s.setFormat(format)
	return s
}

// setFormat switches to format (--log-format) and masks the secrets
// secrets returns from then on.
func (s *stderrLog) setFormat(format string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.json = format == logFormatJSON
	if s.json && s.h == nil {
		s.h = slog.NewJSONHandler(s.w, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: s.replaceAttr})
	}
}

// setSecrets adds the values to mask (the parsed --password, --token).
func (s *stderrLog) setSecrets(more func() []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	early := s.secrets
	s.secrets = func() []string { return append(early(), more()...) }
}

// JSON reports whether stderr is in json mode.
func (s *stderrLog) JSON() bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.json
}

// mask hides the credentials in text: the user information of any URL and
// each secret of 3 bytes or more.
func (s *stderrLog) mask(text string) string {
	text = jsutil.MaskURLs(text)
	s.mu.Lock()
	secrets := s.secrets
	s.mu.Unlock()
	for _, secret := range secrets() {
		if len(secret) >= 3 {
			text = strings.ReplaceAll(text, secret, "***")
		}
	}
	return text
}

// replaceAttr is the json handler's rewrite of every attribute: times in
// UTC, levelNotice as WARN, credentials masked in every string and error.
func (s *stderrLog) replaceAttr(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.LevelKey {
		if l, ok := a.Value.Any().(slog.Level); ok && l == levelNotice {
			return slog.String(slog.LevelKey, "WARN")
		}
		return a
	}
	switch a.Value.Kind() {
	case slog.KindTime:
		return slog.String(a.Key, a.Value.Time().UTC().Format(time.RFC3339Nano))
	case slog.KindString:
		return slog.String(a.Key, s.mask(a.Value.String()))
	case slog.KindAny:
		if err, ok := a.Value.Any().(error); ok {
			return slog.String(a.Key, s.mask(err.Error()))
		}
	}
	return a
}

// Write writes jsctl's own text: in text mode as it is (masked); in json
// mode each line starting with "jsctl: " begins a record, and the lines
// after it in the same write (a stack trace) belong to it. A write ends
// its last record even without a newline, so a question waiting for an
// answer is seen at once.
func (s *stderrLog) Write(p []byte) (int, error) {
	if !s.JSON() {
		text := string(p)
		if masked := s.mask(text); masked != text {
			_, err := io.WriteString(s.w, masked)
			return len(p), err
		}
		return s.w.Write(p)
	}
	var rec []string
	flush := func() {
		if len(rec) == 0 {
			return
		}
		level, msg := levelOf(strings.Join(rec, "\n"))
		rec = nil
		if msg != "" {
			_ = s.h.Handle(context.Background(), slog.NewRecord(time.Now(), level, msg, 0))
		}
	}
	for _, line := range strings.Split(strings.TrimSuffix(string(p), "\n"), "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.HasPrefix(line, "jsctl: ") {
			flush()
		}
		if line != "" || len(rec) > 0 {
			rec = append(rec, line)
		}
	}
	flush()
	return len(p), nil
}

// levelOf reads a line's level from the words jsctl's text starts it with,
// and returns the text without them.
func levelOf(line string) (slog.Level, string) {
	msg := strings.TrimPrefix(line, "jsctl: ")
	switch {
	case strings.HasPrefix(msg, "error: "):
		return slog.LevelError, strings.TrimPrefix(msg, "error: ")
	case strings.HasPrefix(msg, "internal error"):
		return slog.LevelError, msg
	case strings.HasPrefix(msg, "warning: "):
		return slog.LevelWarn, strings.TrimPrefix(msg, "warning: ")
	case strings.HasPrefix(msg, "note: "):
		return slog.LevelWarn, strings.TrimPrefix(msg, "note: ")
	}
	return slog.LevelInfo, strings.TrimSpace(msg)
}

// logger is a log/slog logger for jsctl's own lines with fields: in text
// mode it writes "jsctl: [error: |warning: ]MSG" to text (the fields are
// for json, the message says them in words); in json mode a record with
// the fields.
func (s *stderrLog) logger(text io.Writer) *slog.Logger {
	if s.JSON() {
		return slog.New(s.h)
	}
	return slog.New(textHandler{w: text})
}

// textHandler writes a record as jsctl's text line.
type textHandler struct{ w io.Writer }

func (textHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h textHandler) WithAttrs([]slog.Attr) slog.Handler     { return h }
func (h textHandler) WithGroup(string) slog.Handler          { return h }

func (h textHandler) Handle(_ context.Context, r slog.Record) error {
	word := ""
	switch {
	case r.Level >= slog.LevelError:
		word = "error: "
	case r.Level == slog.LevelWarn:
		word = "warning: "
	}
	_, err := io.WriteString(h.w, "jsctl: "+word+r.Message+"\n")
	return err
}

// handlerWriters are where one run of a handler writes its stdout and
// stderr. In text mode both go to out as they are (stderr nil: one pipe
// for both, so their order is kept); in json mode each stream's lines
// become records with attrs. done ends the last lines; call it once the
// process's output has ended.
func (s *stderrLog) handlerWriters(out io.Writer, attrs ...slog.Attr) (stdout, stderr io.Writer, done func()) {
	if !s.JSON() {
		return out, nil, func() {}
	}
	o := &lineLog{h: s.h, attrs: append([]slog.Attr{slog.String("source", "handler"), slog.String("stream", "stdout")}, attrs...)}
	e := &lineLog{h: s.h, attrs: append([]slog.Attr{slog.String("source", "handler"), slog.String("stream", "stderr")}, attrs...)}
	return o, e, func() { o.end(); e.end() }
}

// lineLog turns a stream of output into one record per line.
type lineLog struct {
	mu    sync.Mutex
	h     slog.Handler
	attrs []slog.Attr
	buf   []byte
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.buf = append(l.buf, p...)
			for len(l.buf) >= maxLogLine {
				l.emit(l.buf[:maxLogLine], true)
				l.buf = append(l.buf[:0], l.buf[maxLogLine:]...)
			}
			break
		}
		line := p[:i]
		if len(l.buf) > 0 {
			line = append(l.buf, line...)
		}
		for len(line) > maxLogLine {
			l.emit(line[:maxLogLine], true)
			line = line[maxLogLine:]
		}
		l.emit(bytes.TrimSuffix(line, []byte("\r")), false)
		l.buf = l.buf[:0]
		p = p[i+1:]
	}
	return n, nil
}

// end emits a last line that has no newline.
func (l *lineLog) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.emit(l.buf, false)
		l.buf = nil
	}
}

func (l *lineLog) emit(line []byte, partial bool) {
	r := slog.NewRecord(time.Now(), slog.LevelInfo, string(line), 0)
	r.AddAttrs(l.attrs...)
	if partial {
		r.AddAttrs(slog.Bool("partial", true))
	}
	_ = l.h.Handle(context.Background(), r)
}

// preScan finds, before the command line is parsed, the log format
// (--log-format, JSCTL_LOG_FORMAT) and the secrets given (--password,
// --token, NATS_PASSWORD, NATS_TOKEN), so that even an error about the
// command line itself is written in that format and masked. The parsed
// flags decide from then on.
func preScan(args []string) (format string, secrets []string) {
	format = os.Getenv("JSCTL_LOG_FORMAT")
	for _, env := range []string{"NATS_PASSWORD", "NATS_TOKEN"} {
		if v := os.Getenv(env); v != "" {
			secrets = append(secrets, v)
		}
	}
	value := func(i int, name string) (string, bool) {
		a := args[i]
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
		if a == name && i+1 < len(args) {
			return args[i+1], true
		}
		return "", false
	}
	for i, a := range args {
		if a == "--" {
			break
		}
		if v, ok := value(i, "--log-format"); ok {
			format = v
		}
		for _, name := range []string{"--password", "--token"} {
			if v, ok := value(i, name); ok {
				secrets = append(secrets, v)
			}
		}
	}
	return format, secrets
}

// unwrapStderr is the writer under jsctl's standard error, for the code
// that must know whether it draws on a terminal (its width).
func unwrapStderr(w io.Writer) io.Writer {
	if s, ok := w.(*stderrLog); ok {
		return s.w
	}
	return w
}
