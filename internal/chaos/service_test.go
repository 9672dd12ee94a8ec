package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The tests of `consume` run as a service (docs/consume.md: Metrics,
// Health, Logs for pipelines) against nats-server processes.

// serviceProc is a running `jsctl consume --metrics-listen 127.0.0.1:0`:
// its address (read from what it prints on stderr), and its output.
type serviceProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	addr   string
	stdout *lineBuffer
	stderr *lineBuffer
	exited chan struct{}
	err    error
}

// lineBuffer collects a stream's lines.
type lineBuffer struct {
	mu    sync.Mutex
	lines []string
}

func newLineBuffer() *lineBuffer { return &lineBuffer{} }

func (b *lineBuffer) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		b.mu.Lock()
		b.lines = append(b.lines, sc.Text())
		b.mu.Unlock()
	}
	if err := sc.Err(); err != nil { // a line over 4 MiB: the checks see it
		b.mu.Lock()
		b.lines = append(b.lines, "(reading stopped: "+err.Error()+")")
		b.mu.Unlock()
	}
}

func (b *lineBuffer) all() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.lines...)
}

func (b *lineBuffer) String() string { return strings.Join(b.all(), "\n") }

// startService starts jsctl consume with args (after the stream and
// consumer) and waits for the line saying where it serves.
func startService(t *testing.T, url, home string, extraEnv []string, args ...string) *serviceProc {
	t.Helper()
	cmd := jsctlCommand(url, home, args...)
	cmd.Env = append(cmd.Env, extraEnv...)
	outR, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &serviceProc{t: t, cmd: cmd, stdout: newLineBuffer(), stderr: newLineBuffer(), exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); p.stdout.read(outR) }()
	go func() { defer readers.Done(); p.stderr.read(errR) }()
	go func() {
		readers.Wait()
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	served := regexp.MustCompile(`serving metrics on http://([0-9.:\[\]]+)/metrics`)
	testserver.WaitFor(t, time.Minute, "jsctl to say where it serves its metrics", func() bool {
		for _, l := range p.stderr.all() {
			if m := served.FindStringSubmatch(l); m != nil {
				p.addr = m[1]
				return true
			}
		}
		select {
		case <-p.exited:
			t.Fatalf("jsctl exited (%v) before serving:\n%s", p.err, p.stderr)
		default:
		}
		return false
	})
	return p
}

// get fetches path from the service: status and body ("" and 0 when it
// does not answer).
func (p *serviceProc) get(path string) (int, string) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + p.addr + path)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// scrape reads /metrics: each jsctl_consume_ sample by name and labels
// (outcome only), and the text itself.
func (p *serviceProc) scrape() (map[string]float64, string) {
	p.t.Helper()
	code, body := p.get("/metrics")
	if code != http.StatusOK {
		p.t.Fatalf("GET /metrics: %d %s", code, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		p.t.Fatalf("parse /metrics: %v\n%s", err, body)
	}
	out := map[string]float64{}
	for name, f := range fams {
		if !strings.HasPrefix(name, "jsctl_consume_") {
			continue
		}
		for _, m := range f.Metric {
			key := name
			for _, l := range m.Label {
				if l.GetName() == "outcome" {
					key += "{" + l.GetValue() + "}"
				}
			}
			switch {
			case m.Counter != nil:
				out[key] = m.Counter.GetValue()
			case m.Gauge != nil:
				out[key] = m.Gauge.GetValue()
			case m.Histogram != nil:
				out[key+"_count"] = float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return out, body
}

// wait waits for jsctl to exit.
func (p *serviceProc) wait(d time.Duration) {
	p.t.Helper()
	select {
	case <-p.exited:
	case <-time.After(d):
		p.t.Fatalf("jsctl did not exit within %v:\n%s", d, p.stderr)
	}
}

// trimmedScrape keeps the jsctl_consume_ samples of a scrape (not the
// histogram's buckets), for the log.
func trimmedScrape(body string) string {
	var keep []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "jsctl_consume_") && !strings.Contains(l, "_bucket{") || strings.HasPrefix(l, "process_resident_memory_bytes") || strings.HasPrefix(l, "go_goroutines") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// serviceHandler fails, of the first 200 messages, those whose sequence
// ends in 3 every time (they fail for good after --max-failures 2 and are
// dead-lettered) and those ending in 7 on their first delivery only; it
// never ends for the sequence $HANG (stopped by the test: released).
const serviceHandler = `
if [ "$JSCTL_SEQ" = "$HANG" ]; then exec sleep 600; fi
if [ "$JSCTL_SEQ" -le 200 ]; then
	case "$JSCTL_SEQ" in
	*3) echo "fails $JSCTL_SEQ" >&2; exit 1 ;;
	*7) [ "$JSCTL_DELIVERIES" -gt 1 ] || exit 1 ;;
	esac
fi
cat >/dev/null`

// TestConsumeMetricsEqualSummary: the counts scraped from
// --metrics-listen at the end of a run equal its --json summary exactly,
// with a handler that fails some messages (retried, terminated,
// dead-lettered), duplicates and a handler stopped at the end (released).
func TestConsumeMetricsEqualSummary(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	e := newEnv(t, natsproc.Options{JetStream: "sync_interval: always"})
	ctx := e.ctx()
	if _, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: "DEAD", Subjects: []string{"dead.>"}, Duplicates: time.Hour}); err != nil {
		t.Fatal(err)
	}
	// ORDERS holds 200 messages (newEnv); then 10 pairs with one key each
	// (the second of a pair is a duplicate), then the one that hangs.
	for i := 0; i < 20; i++ {
		m := nats.NewMsg("orders.eu")
		m.Header.Set("Order-Id", fmt.Sprintf("pair-%d", i/2))
		m.Data = fmt.Appendf(nil, "pair %d", i/2)
		if _, err := e.js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.js.Publish(ctx, "orders.eu", []byte("hangs")); err != nil {
		t.Fatal(err)
	}
	const hang = 221
	if _, err := e.js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "svc", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	p := startService(t, e.srv.URL(), e.home, []string{fmt.Sprintf("HANG=%d", hang)},
		"consume", "ORDERS", "svc", "--exec", serviceHandler, "--workers", "4", "--key", "header:Order-Id",
		"--max-failures", "2", "--retry-delay", "100ms", "--dead-letter", "dead.orders", "--stop-timeout", "1s",
		"--metrics-listen", "127.0.0.1:0", "--metrics-linger", "2m", "--json")

	// Settled: every message but the hanging one done or terminated.
	var during string
	testserver.WaitFor(t, 5*time.Minute, "every message but one to be done or to fail for good", func() bool {
		m, body := p.scrape()
		during = body
		return m["jsctl_consume_messages_total{processed}"]+m["jsctl_consume_messages_total{duplicate}"]+m["jsctl_consume_terminated_total"] == hang-1 &&
			m["jsctl_consume_in_flight"] == 1
	})
	t.Logf("/metrics during the run (trimmed):\n%s", trimmedScrape(during))
	_ = p.cmd.Process.Signal(syscall.SIGTERM)

	// The summary line, then the final scrape (--metrics-linger).
	var sum struct {
		Summary struct {
			Processed, Duplicates, Failed, FailedDeliveries, Terminated, Busy, Released, DeadLettered int
		} `json:"summary"`
	}
	testserver.WaitFor(t, time.Minute, "the --json summary", func() bool {
		for _, l := range p.stdout.all() {
			if strings.HasPrefix(l, `{"summary"`) {
				var raw map[string]map[string]any
				if err := json.Unmarshal([]byte(l), &raw); err != nil {
					t.Fatalf("summary line: %v\n%s", err, l)
				}
				s := raw["summary"]
				num := func(k string) int {
					v, ok := s[k].(float64)
					if !ok {
						t.Fatalf("summary has no %q: %s", k, l)
					}
					return int(v)
				}
				sum.Summary.Processed, sum.Summary.Duplicates, sum.Summary.Failed = num("processed"), num("duplicates"), num("failed")
				sum.Summary.FailedDeliveries, sum.Summary.Terminated, sum.Summary.Busy = num("failed_deliveries"), num("terminated"), num("busy")
				sum.Summary.Released, sum.Summary.DeadLettered = num("released"), num("dead_lettered")
				return true
			}
		}
		return false
	})
	hcode, hbody := p.get("/healthz")
	m, body := p.scrape()
	t.Logf("/metrics after the run (trimmed):\n%s", trimmedScrape(body))
	s := sum.Summary
	for _, c := range []struct {
		metric  string
		summary int
	}{
		{"jsctl_consume_messages_total{processed}", s.Processed},
		{"jsctl_consume_messages_total{duplicate}", s.Duplicates},
		{"jsctl_consume_messages_total{failed}", s.FailedDeliveries},
		{"jsctl_consume_messages_total{busy}", s.Busy},
		{"jsctl_consume_messages_total{released}", s.Released},
		{"jsctl_consume_messages_total{dead_lettered}", s.DeadLettered},
		{"jsctl_consume_terminated_total", s.Terminated},
	} {
		got, ok := m[c.metric]
		if !ok || got != float64(c.summary) {
			t.Errorf("%s = %v (present %v), the summary says %d", c.metric, got, ok, c.summary)
		}
	}
	// Not a run where everything is 0: what the handler did is there.
	if s.Processed != 190 || s.Duplicates != 10 || s.Terminated != 20 || s.DeadLettered != 20 || s.Released != 1 || s.FailedDeliveries != 60 {
		t.Errorf("summary %+v: want processed 190, duplicates 10, failed deliveries 60 (20 × 2 + 20), terminated 20, dead-lettered 20, released 1", s)
	}
	if m["jsctl_consume_in_flight"] != 0 || m["jsctl_consume_handler_duration_seconds_count"] < float64(hang) {
		t.Errorf("in flight %v, handler runs %v: want 0 and at least %d", m["jsctl_consume_in_flight"], m["jsctl_consume_handler_duration_seconds_count"], hang)
	}
	if hcode != http.StatusServiceUnavailable || !strings.HasPrefix(hbody, "stopping: ") {
		t.Errorf("/healthz after the run: %d %q, want 503 stopping", hcode, hbody)
	}
	// The scrape after the end lets it exit (exit 1: messages failed for good).
	p.wait(time.Minute)
	if code := p.cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("exit %d, want 1 (messages failed):\n%s", code, p.stderr)
	}
}

// TestConsumeHealthAndJSONLogs: /healthz answers 503 within one
// --retry-for once the server is killed, 200 again once it is back, and
// 503 once the consumer is deleted; /readyz is 200 from the first
// answered fetch. The run logs with --log-format json: every stderr line
// is a JSON object, the handler's lines carry their seq and stream, and
// no line carries the password or the token of the URL (the handler even
// prints its NATS_URL). The timings are logged.
func TestConsumeHealthAndJSONLogs(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	const user, password = "alice", "pw-Hunter2-secret"
	e := newEnv(t, natsproc.Options{
		JetStream: "sync_interval: always",
		Config:    fmt.Sprintf("authorization { users: [ {user: %q, password: %q} ] }", user, password),
	}, nats.UserInfo(user, password))
	ctx := e.ctx()
	if _, err := e.js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "svc", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("nats://%s:%s@127.0.0.1:%d", user, password, e.srv.Port)
	const retryFor = 20 * time.Second
	handler := `echo "out $JSCTL_SEQ $NATS_URL"; echo "err $JSCTL_SEQ" >&2; case "$JSCTL_SEQ" in *50) exit 1 ;; esac; cat >/dev/null` // 50 and 150 fail
	p := startService(t, url, e.home, []string{"JSCTL_LOG_FORMAT=json"},
		"consume", "ORDERS", "svc", "--exec", handler, "--max-failures", "1", "--workers", "2",
		"--retry-for", retryFor.String(), "--timeout", "2s", "--metrics-listen", "127.0.0.1:0")

	healthz := func() (int, string) { return p.get("/healthz") }
	waitHealth := func(start time.Time, what string, want int) (time.Duration, string) {
		t.Helper()
		var body string
		testserver.WaitFor(t, 2*time.Minute, what, func() bool {
			var code int
			code, body = healthz()
			return code == want
		})
		return time.Since(start), strings.TrimSpace(body)
	}
	handled := func() float64 {
		m, _ := p.scrape()
		return m["jsctl_consume_messages_total{processed}"] + m["jsctl_consume_messages_total{failed}"]
	}
	testserver.WaitFor(t, 5*time.Minute, "the 200 messages to be handled", func() bool { return handled() == 200 })
	if code, body := p.get("/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz after the first fetch: %d %s", code, body)
	}
	if code, body := healthz(); code != http.StatusOK {
		t.Fatalf("/healthz while fetching: %d %s", code, body)
	}

	killed := time.Now()
	e.srv.Kill()
	down, why := waitHealth(killed, "/healthz to answer 503 after the server was killed", http.StatusServiceUnavailable)
	t.Logf("server killed: /healthz 503 after %v: %q", down.Round(time.Millisecond), why)
	if down > retryFor {
		t.Errorf("/healthz took %v to answer 503, more than --retry-for %v", down, retryFor)
	}
	if code, _ := p.get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz while the server is down: %d, want 200 (ready once, until the run stops)", code)
	}
	restart := time.Now()
	e.srv.Restart()
	restarted := time.Since(restart)
	up, why := waitHealth(time.Now(), "/healthz to answer 200 after the server restarted", http.StatusOK)
	t.Logf("server restarted (healthy after %v): /healthz 200 %v later: %q", restarted.Round(time.Millisecond), up.Round(time.Millisecond), why)
	// Working again: a new message is handled.
	if _, err := testserver.Publish(ctx, e.js, &nats.Msg{Subject: "orders.eu", Data: []byte("after the restart")}); err != nil {
		t.Fatal(err)
	}
	testserver.WaitFor(t, 2*time.Minute, "the message published after the restart to be handled", func() bool { return handled() == 201 })

	deleted := time.Now()
	if err := e.js.DeleteConsumer(ctx, "ORDERS", "svc"); err != nil {
		t.Fatal(err)
	}
	gone, why := waitHealth(deleted, "/healthz to answer 503 after the consumer was deleted", http.StatusServiceUnavailable)
	t.Logf("consumer deleted: /healthz 503 after %v: %q", gone.Round(time.Millisecond), why)
	if !strings.Contains(why, `consumer "svc" on stream "ORDERS" does not exist`) {
		t.Errorf("/healthz after the consumer was deleted: %q", why)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(time.Minute)

	recs := checkJSONLines(t, p.stderr.all(), password)
	var handlerOut, handlerErr, failed, served int
	var own []string // jsctl's own lines, for the log
	for i, r := range recs {
		if r["source"] != "handler" {
			own = append(own, p.stderr.all()[i])
		}
		switch {
		case r["source"] == "handler" && r["stream"] == "stdout" && r["seq"] != nil:
			handlerOut++
			if !strings.Contains(r["msg"].(string), "nats://***@127.0.0.1") {
				t.Errorf("handler line without its masked NATS_URL: %v", r)
			}
		case r["source"] == "handler" && r["stream"] == "stderr" && r["seq"] != nil:
			handlerErr++
		case r["level"] == "WARN" && strings.Contains(r["msg"].(string), "failed") && r["stream"] == "ORDERS" && r["consumer"] == "svc" && r["seq"] != nil:
			failed++
		case r["addr"] == p.addr:
			served++
		}
	}
	t.Logf("jsctl's own stderr lines (--log-format json):\n%s", strings.Join(own, "\n"))
	if handlerOut < 201 || handlerErr < 201 || failed != 2 || served != 1 {
		t.Errorf("records: %d handler stdout lines, %d stderr lines (want 201 each at least), %d failures (want 2), %d serving lines (want 1)", handlerOut, handlerErr, failed, served)
	}
	if strings.Contains(p.stdout.String(), password) {
		t.Errorf("the password is on stdout:\n%s", p.stdout)
	}

	// A token in the URL is masked too, in the handler's lines and in
	// jsctl's (a wrong token: the connection error names the URL).
	const token, wrong = "tok-Secret-42", "tok-Wrong-99"
	ts := natsproc.Start(t, natsproc.Options{Config: fmt.Sprintf("authorization { token: %q }", token)})
	tnc, err := nats.Connect(ts.URL(), nats.Token(token))
	if err != nil {
		t.Fatal(err)
	}
	defer tnc.Close()
	tjs, err := jetstream.New(tnc)
	if err != nil {
		t.Fatal(err)
	}
	testserver.AddStream(t, tjs, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	testserver.AddConsumer(t, tjs, "ORDERS", jetstream.ConsumerConfig{Durable: "svc", AckPolicy: jetstream.AckExplicitPolicy})
	if _, err := testserver.Publish(ctx, tjs, &nats.Msg{Subject: "orders.eu", Data: []byte("one")}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tok, want string
		code      int
	}{
		{token, `"source":"handler","stream":"stdout","seq":1`, 0},
		{wrong, "authorization failed", 7},
	} {
		var stderr strings.Builder
		cmd := jsctlCommand(fmt.Sprintf("nats://%s@127.0.0.1:%d", c.tok, ts.Port), e.home, "--log-format", "json",
			"consume", "ORDERS", "svc", "--exec", `echo "$NATS_URL"`, "--idle", "1s")
		cmd.Stderr = &stderr
		err := cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != c.code {
			t.Errorf("token %s: exit %d (%v), want %d:\n%s", c.tok, code, err, c.code, stderr.String())
		}
		checkJSONLines(t, strings.Split(strings.TrimSpace(stderr.String()), "\n"), c.tok)
		if !strings.Contains(stderr.String(), c.want) || !strings.Contains(stderr.String(), "nats://***@127.0.0.1") {
			t.Errorf("token %s: want %s and the URL masked:\n%s", c.tok, c.want, stderr.String())
		}
	}
}

// checkJSONLines checks that every line is a JSON object with time,
// level and msg, and that none holds secret; it returns the objects.
func checkJSONLines(t *testing.T, lines []string, secret string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for i, l := range lines {
		if strings.Contains(l, secret) {
			t.Errorf("stderr line %d holds a secret: %s", i+1, l)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("stderr line %d is not JSON: %v: %q", i+1, err, l)
			continue
		}
		if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(m["time"])); err != nil || m["level"] == nil || m["msg"] == nil {
			t.Errorf("stderr line %d lacks time, level or msg: %s", i+1, l)
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		t.Error("no stderr lines")
	}
	return out
}
