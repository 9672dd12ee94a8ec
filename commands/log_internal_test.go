package commands

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// jsonRecords parses out as one JSON object per line, failing the test on
// any line that is not one with "time" (RFC 3339, UTC), "level" and "msg".
func jsonRecords(t *testing.T, out string) []map[string]any {
	t.Helper()
	var recs []map[string]any
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" && out == "" {
			break
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %d is not a JSON object: %v\n%q", i+1, err, line)
		}
		ts, _ := m["time"].(string)
		if tm, err := time.Parse(time.RFC3339Nano, ts); err != nil || !strings.HasSuffix(ts, "Z") || tm.IsZero() {
			t.Fatalf("line %d: time %q is not RFC 3339 UTC\n%s", i+1, ts, line)
		}
		if l, _ := m["level"].(string); l != "INFO" && l != "WARN" && l != "ERROR" {
			t.Fatalf("line %d: level %q\n%s", i+1, l, line)
		}
		if _, ok := m["msg"].(string); !ok {
			t.Fatalf("line %d: no msg\n%s", i+1, line)
		}
		recs = append(recs, m)
	}
	return recs
}

// In json mode every line jsctl writes becomes one record, its level read
// from "error:", "warning:" and "note:", credentials masked, a question
// without a newline written at once; in text mode lines pass as they are,
// masked.
func TestStderrLogLines(t *testing.T) {
	const pw, token = "hunter2-pw", "t0ken-value"
	args := []string{"--log-format", "json", "--password", pw, "--token=" + token, "seek"}
	var buf bytes.Buffer
	s := newStderrLog(&buf, args)
	writes := []string{
		"jsctl: error: connect to nats://alice:" + pw + "@127.0.0.1:4222: refused\n",
		"jsctl: warning: token " + token + " seen\n",
		"jsctl: note: --acks-bucket is deprecated and will be removed; use --bucket\n",
		"jsctl: no answer from the server; asking again for up to 27s (Ctrl-C to stop)\n",
		"run \"jsctl seek --help\" for usage\n",
		"jsctl: internal error (a bug in jsctl): boom\ngoroutine 1 [running]:\nmain.main()\n",
		"Reset 2 consumers? [y/N] ",
		"\n",
		"jsctl: first\njsctl: second\n",
	}
	for _, w := range writes {
		if n, err := s.Write([]byte(w)); n != len(w) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", w, n, err)
		}
	}
	recs := jsonRecords(t, buf.String())
	want := []struct{ level, msg string }{
		{"ERROR", "connect to nats://***@127.0.0.1:4222: refused"},
		{"WARN", "token *** seen"},
		{"WARN", "--acks-bucket is deprecated and will be removed; use --bucket"},
		{"INFO", "no answer from the server; asking again for up to 27s (Ctrl-C to stop)"},
		{"INFO", "run \"jsctl seek --help\" for usage"},
		{"ERROR", "internal error (a bug in jsctl): boom\ngoroutine 1 [running]:\nmain.main()"},
		{"INFO", "Reset 2 consumers? [y/N]"},
		{"INFO", "first"},
		{"INFO", "second"},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d:\n%s", len(recs), len(want), buf.String())
	}
	for i, w := range want {
		if recs[i]["level"] != w.level || recs[i]["msg"] != w.msg {
			t.Errorf("record %d: %v %q, want %s %q", i, recs[i]["level"], recs[i]["msg"], w.level, w.msg)
		}
	}
	if strings.Contains(buf.String(), pw) || strings.Contains(buf.String(), token) {
		t.Errorf("a secret was written:\n%s", buf.String())
	}

	// Text: as written, masked.
	buf.Reset()
	s = newStderrLog(&buf, []string{"--password=" + pw})
	s.setFormat(logFormatText)
	in := "jsctl: error: connect to nats://u:" + pw + "@h:1 with " + pw + "\n\r\033[Kspinner"
	_, _ = s.Write([]byte(in))
	if got, want := buf.String(), "jsctl: error: connect to nats://***@h:1 with ***\n\r\033[Kspinner"; got != want {
		t.Errorf("text: %q, want %q", got, want)
	}
	// The parsed flags' secrets count too.
	buf.Reset()
	s = newStderrLog(&buf, nil)
	s.setSecrets(func() []string { return []string{"from-flags", ""} })
	_, _ = s.Write([]byte("jsctl: from-flags\n"))
	if buf.String() != "jsctl: ***\n" {
		t.Errorf("parsed secret: %q", buf.String())
	}
}

// The records jsctl makes itself carry their fields; the text form is the
// sentence alone, with the level's word.
func TestStderrLogLogger(t *testing.T) {
	var buf bytes.Buffer
	s := newStderrLog(&buf, []string{"--log-format=json", "--password", "pw-secret"})
	lg := s.logger(nil)
	lg.LogAttrs(t.Context(), levelNotice, "message 7 (orders.eu): failed: exit 1", slog.Uint64("seq", 7), slog.String("stream", "ORDERS"),
		slog.Time("until", time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 3600))), slog.Any("error", errString("bad pw-secret")))
	recs := jsonRecords(t, buf.String())
	if len(recs) != 1 {
		t.Fatalf("%d records: %s", len(recs), buf.String())
	}
	r := recs[0]
	if r["level"] != "WARN" || r["seq"] != float64(7) || r["stream"] != "ORDERS" || r["until"] != "2026-01-02T02:04:05Z" || r["error"] != "bad ***" {
		t.Errorf("record %v", r)
	}

	var text bytes.Buffer
	s = newStderrLog(&text, nil)
	lg = s.logger(&text)
	lg.LogAttrs(t.Context(), levelNotice, "message 7: failed", slog.Uint64("seq", 7))
	lg.Warn("look", "k", 1)
	lg.Error("broke")
	lg.Info("said")
	if got, want := text.String(), "jsctl: message 7: failed\njsctl: warning: look\njsctl: error: broke\njsctl: said\n"; got != want {
		t.Errorf("text:\n%s\nwant:\n%s", got, want)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// A handler's output lines become records naming the stream they came on
// and the message, whatever the writes' boundaries; a line longer than
// maxLogLine is cut into parts; text mode passes the output as it is.
func TestHandlerOutputLines(t *testing.T) {
	var buf bytes.Buffer
	s := newStderrLog(&buf, []string{"--log-format", "json"})
	stdout, stderr, done := s.handlerWriters(nil, slog.Uint64("seq", 42))
	for _, w := range []string{"one\ntw", "o\r\n", "", "\nthree"} {
		_, _ = stdout.Write([]byte(w))
	}
	_, _ = stderr.Write([]byte("oops\n"))
	long := strings.Repeat("x", maxLogLine+10)
	_, _ = stderr.Write([]byte(long + "\n"))
	done()
	recs := jsonRecords(t, buf.String())
	type rec struct {
		stream, msg string
		partial     bool
	}
	want := []rec{{"stdout", "one", false}, {"stdout", "two", false}, {"stdout", "", false}, {"stderr", "oops", false},
		{"stderr", long[:maxLogLine], true}, {"stderr", long[maxLogLine:], false}, {"stdout", "three", false}}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d:\n%s", len(recs), len(want), buf.String())
	}
	for i, w := range want {
		r := recs[i]
		partial, _ := r["partial"].(bool)
		if r["stream"] != w.stream || r["msg"] != w.msg || partial != w.partial || r["seq"] != float64(42) || r["source"] != "handler" || r["level"] != "INFO" {
			t.Errorf("record %d: %v, want %+v", i, r, w)
		}
	}

	var out bytes.Buffer
	s = newStderrLog(&bytes.Buffer{}, nil)
	o, e, done := s.handlerWriters(&out)
	if o != &out || e != nil {
		t.Fatalf("text mode: stdout %v, stderr %v; want the writer itself and nil (one pipe)", o, e)
	}
	done()
}

func TestPreScan(t *testing.T) {
	t.Setenv("JSCTL_LOG_FORMAT", "")
	t.Setenv("NATS_PASSWORD", "envpw")
	t.Setenv("NATS_TOKEN", "")
	for _, c := range []struct {
		args    []string
		format  string
		secrets []string
	}{
		{[]string{"seek", "--log-format", "json"}, "json", []string{"envpw"}},
		{[]string{"--log-format=json", "--token", "tk", "x"}, "json", []string{"envpw", "tk"}},
		{[]string{"consume", "--", "--log-format", "json", "--password", "p"}, "", []string{"envpw"}},
		{[]string{"--password"}, "", []string{"envpw"}},
	} {
		f, s := preScan(c.args)
		if f != c.format || strings.Join(s, ",") != strings.Join(c.secrets, ",") {
			t.Errorf("preScan(%q) = %q, %q; want %q, %q", c.args, f, s, c.format, c.secrets)
		}
	}
	t.Setenv("JSCTL_LOG_FORMAT", "json")
	if f, _ := preScan(nil); f != "json" {
		t.Errorf("JSCTL_LOG_FORMAT=json: %q", f)
	}
}
