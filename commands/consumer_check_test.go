package commands_test

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/commands"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// checkFixture starts a server with stream ORDERS (5 messages) and three
// consumers: billing (3 acked, lag 2), audit (caught up) and "it's" (a
// name that needs quoting in perfdata, nothing delivered, paused). It
// returns a function running jsctl consumer check with args.
func checkFixture(t *testing.T) func(args ...string) (int, string, string) {
	t.Helper()
	s := testserver.Start(t)
	js, err := jetstream.New(testserver.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testserver.Context(t, 30*time.Second)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, err := js.Publish(ctx, "orders.eu", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	for name, n := range map[string]int{"billing": 3, "audit": 5, "it's": 0} {
		c, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy})
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			continue
		}
		batch, err := c.Fetch(n, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			if err := m.DoubleAck(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := js.PauseConsumer(ctx, "ORDERS", "it's", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	return func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		args = append([]string{"--server", s.ClientURL(), "consumer", "check", "ORDERS", "--all"}, args...)
		code := commands.Run(ctx, args, strings.NewReader(""), &out, &errb, false)
		return code, out.String(), errb.String()
	}
}

// TestConsumerCheckPrometheus parses --format prometheus with the
// Prometheus text parser: every family has HELP and TYPE gauge, every
// sample the stream and consumer labels, and the values are right.
func TestConsumerCheckPrometheus(t *testing.T) {
	check := checkFixture(t)
	code, out, stderr := check("--format", "prometheus", "--lag-warn", "1", "--paused-crit")
	if code != 2 || stderr != "" {
		t.Fatalf("exit code %d (want 2, CRITICAL), stderr %q", code, stderr)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(out))
	if err != nil {
		t.Fatalf("prometheus text does not parse: %v\n%s", err, out)
	}
	want := map[string]map[string]float64{
		"jsctl_consumer_check_status":              {"audit": 0, "billing": 1, "it's": 2},
		"jsctl_consumer_lag_messages":              {"audit": 0, "billing": 2, "it's": 5},
		"jsctl_consumer_paused":                    {"audit": 0, "billing": 0, "it's": 1},
		"jsctl_consumer_ack_pending_messages":      nil,
		"jsctl_consumer_redelivered_messages":      nil,
		"jsctl_consumer_waiting_pulls":             nil,
		"jsctl_consumer_lag_seconds":               nil,
		"jsctl_consumer_last_delivery_age_seconds": nil,
		"jsctl_consumer_last_ack_age_seconds":      nil,
	}
	if len(fams) != len(want) {
		t.Errorf("got %d metric families, want %d:\n%s", len(fams), len(want), out)
	}
	for name, values := range want {
		f, ok := fams[name]
		if !ok {
			t.Errorf("no family %s in:\n%s", name, out)
			continue
		}
		if f.GetHelp() == "" || f.GetType().String() != "GAUGE" {
			t.Errorf("%s: help %q, type %s; want a help text and GAUGE", name, f.GetHelp(), f.GetType())
		}
		if len(f.GetMetric()) != 3 {
			t.Errorf("%s: %d samples, want 3", name, len(f.GetMetric()))
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if len(labels) != 2 || labels["stream"] != "ORDERS" {
				t.Errorf("%s: labels %v, want stream=ORDERS and consumer", name, labels)
			}
			if w, ok := values[labels["consumer"]]; ok && m.GetGauge().GetValue() != w {
				t.Errorf("%s{consumer=%q} = %v, want %v", name, labels["consumer"], m.GetGauge().GetValue(), w)
			}
			if m.GetGauge().GetValue() < 0 {
				t.Errorf("%s{consumer=%q} = %v, negative", name, labels["consumer"], m.GetGauge().GetValue())
			}
		}
	}
}

// The Nagios plugin format: "STATUS: text | perfdata" on the first line,
// perfdata 'label'=value[UOM];[warn];[crit];[min];[max] separated by
// blanks, then long-text lines without '|'.
var (
	nagiosFirst = regexp.MustCompile(`^(OK|WARNING|CRITICAL|UNKNOWN): ([^|]+) \| (.+)$`)
	nagiosLong  = regexp.MustCompile(`^(OK|WARNING|CRITICAL|UNKNOWN): [^|]+$`)
	nagiosPerf  = regexp.MustCompile(`^('(?:[^'=]|'')+'|[^'= ]+)=(-?[0-9.]+)(s|us|ms|%|B|KB|MB|TB|c)?(;(-?[0-9.]*)){0,4}$`)
)

// TestConsumerCheckNagiosFormat checks the default output against the
// plugin format, and that the exit code is the status of the first line.
func TestConsumerCheckNagiosFormat(t *testing.T) {
	check := checkFixture(t)
	for _, tc := range []struct {
		args   []string
		status string
		code   int
	}{
		{nil, "OK", 0},
		{[]string{"--lag-warn", "1", "--lag-crit", "5"}, "WARNING", 1},
		{[]string{"--lag-warn", "1", "--lag-crit", "3", "--paused-crit"}, "CRITICAL", 2},
	} {
		code, out, stderr := check(tc.args...)
		if code != tc.code || stderr != "" {
			t.Errorf("%v: exit code %d, stderr %q; want %d and nothing", tc.args, code, stderr, tc.code)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 4 {
			t.Fatalf("%v: %d lines, want a status line and 3 consumer lines:\n%s", tc.args, len(lines), out)
		}
		m := nagiosFirst.FindStringSubmatch(lines[0])
		if m == nil || m[1] != tc.status {
			t.Fatalf("%v: first line %q is not %q: text | perfdata", tc.args, lines[0], tc.status)
		}
		perf := strings.Split(m[3], " ")
		if len(perf) != 3*8 {
			t.Errorf("%v: %d perfdata values, want 24 (8 per consumer)", tc.args, len(perf))
		}
		quoted := false
		for _, p := range perf {
			if !nagiosPerf.MatchString(p) {
				t.Errorf("%v: perfdata %q does not follow label=value[UOM];warn;crit;min;max", tc.args, p)
			}
			quoted = quoted || strings.HasPrefix(p, `'ORDERS.it''s.`)
		}
		if !quoted {
			t.Errorf("%v: the label of consumer it's is not quoted with its quote doubled: %s", tc.args, m[3])
		}
		for _, l := range lines[1:] {
			if !nagiosLong.MatchString(l) {
				t.Errorf("%v: consumer line %q is not STATUS: text (without '|')", tc.args, l)
			}
		}
	}
	_, out, _ := check("--lag-warn", "1", "--lag-crit", "3")
	for _, want := range []string{"ORDERS.billing.lag=2;1;3;0 ", "'ORDERS.it''s.lag'=5;1;3;0 ", "'ORDERS.it''s.paused'=1;;;0;1",
		"WARNING: ORDERS/billing: lag 2 > 1 (warning)\n", "CRITICAL: ORDERS/it's: lag 5 > 3 (critical)\n", "OK: ORDERS/audit: lag 0 messages (0s)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestCheckFirstLineBounded: with many consumers the Nagios status line
// stays under 4 KB (Nagios keeps about 8 KB of output): the worst
// consumers are named, the rest counted, and --perfdata auto falls back to
// a summary; --perfdata all, summary and none do as they say. A command
// line that does not parse still prints an UNKNOWN status line on stdout.
func TestCheckFirstLineBounded(t *testing.T) {
	s := testserver.Start(t)
	js, err := jetstream.New(testserver.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testserver.Context(t, 60*time.Second)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := js.Publish(ctx, "orders.eu", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 60; i++ {
		name := fmt.Sprintf("consumer-with-a-rather-long-name-%02d", i)
		if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := commands.Run(ctx, append([]string{"--server", s.ClientURL(), "consumer", "check"}, args...), strings.NewReader(""), &out, &errb, false)
		return code, out.String()
	}
	first := func(out string) string { l, _, _ := strings.Cut(out, "\n"); return l }

	code, out := run("ORDERS", "--all", "--lag-warn", "1")
	line := first(out)
	if code != 1 || len(line) > 4000 || !strings.HasPrefix(line, "WARNING: 60 consumers on ORDERS: 60 warning (consumer-with-a-rather-long-name-00, ") ||
		!regexp.MustCompile(`, \d+ more\) \| consumers=60 critical=0 warning=60 unknown=0 max_lag=3;1;;0`).MatchString(line) {
		t.Fatalf("auto: exit %d, first line (%d bytes):\n%s", code, len(line), line)
	}
	_, out = run("ORDERS", "--all", "--lag-warn", "1", "--perfdata", "all")
	if line := first(out); len(line) < 4000 || !strings.Contains(line, "ORDERS.consumer-with-a-rather-long-name-59.lag=3;1;;0") {
		t.Fatalf("--perfdata all: want every consumer's values, got %d bytes", len(line))
	}
	_, out = run("ORDERS", "--all", "--perfdata", "none")
	if line := first(out); line != "OK: 60 consumers on ORDERS: 60 ok" {
		t.Fatalf("--perfdata none: %q", line)
	}
	_, out = run("ORDERS", "consumer-with-a-rather-long-name-01", "--perfdata", "summary")
	if line := first(out); !strings.HasPrefix(line, "OK: 1 consumer on ORDERS: 1 ok | consumers=1 critical=0 warning=0 unknown=0 max_lag=3;;;0") {
		t.Fatalf("--perfdata summary: %q", line)
	}

	for _, args := range [][]string{{"ORDERS", "--lag-warn", "abc"}, {}, {"ORDERS", "--all", "--perfdata", "some"}} {
		code, out := run(args...)
		if code != 3 || !strings.HasPrefix(out, "UNKNOWN: ") {
			t.Errorf("consumer check %v: exit %d, stdout %q; want exit 3 and an UNKNOWN status line", args, code, out)
		}
	}

	// A stream that does not exist is named as a stream, not counted as a consumer.
	code, out = run("NOPE", "--all")
	if line := first(out); code != 2 || line != "CRITICAL: stream NOPE critical: stream not found" {
		t.Fatalf("check NOPE --all: exit %d, %q", code, line)
	}
}
