package commands_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestCheckAsDocumentedUser (issue 27, finding 1: the consumer check user
// of docs/permissions.md got "OK ... (0s)" after 10s on a stream with
// allow_direct, where an administrator got CRITICAL at once): on a real
// nats-server process, a user holding exactly the documented row of
// consumer check gets the administrator's verdict and values on streams
// with and without allow_direct, without waiting on refused requests.
func TestCheckAsDocumentedUser(t *testing.T) {
	t.Parallel() // mostly waits on a server process
	var allow []string
	for _, stream := range []string{"ORD", "ORDN"} {
		allow = append(allow, documentedRow(t, "consumer check", stream, "bill")...)
	}
	quoted := make([]string, len(allow))
	for i, s := range allow {
		quoted[i] = fmt.Sprintf("%q", s)
	}
	s := natsproc.Start(t, natsproc.Options{Config: `authorization {
  users = [
    {user: admin, password: pw}
    {user: check, password: pw, permissions: {publish: {allow: [` + strings.Join(quoted, ", ") + `]}, subscribe: {allow: ["_INBOX.>"]}}}
  ]
}`})
	nc, err := nats.Connect(s.URL(), nats.UserInfo("admin", "pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testserver.Context(t, 2*time.Minute)
	for _, stream := range []string{"ORD", "ORDN"} {
		// As the nats CLI makes a stream: allow_direct on ORD.
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{strings.ToLower(stream) + ".>"}, AllowDirect: stream == "ORD"}); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 28; i++ {
			subj := strings.ToLower(stream) + ".us"
			if i >= 10 {
				subj = strings.ToLower(stream) + ".eu"
			}
			if _, err := js.Publish(ctx, subj, nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: "bill", AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: strings.ToLower(stream) + ".eu"}); err != nil {
			t.Fatal(err)
		}
	}
	const timeout = 5 * time.Second
	check := func(user, stream string) (int, map[string]*float64, time.Duration) {
		t.Helper()
		code, out, stderr, took := runJSCTL(t, "-s", s.URL(), "--user", user, "--password", "pw", "--timeout", timeout.String(),
			"consumer", "check", stream, "bill", "--lag-time-crit", "1ms", "--lag-warn", "100", "--json")
		if stderr != "" && code != 2 {
			t.Fatalf("%s on %s: exit %d, stderr %q", user, stream, code, stderr)
		}
		var rep struct {
			Consumers []struct {
				Metrics []struct {
					Name  string   `json:"name"`
					Value *float64 `json:"value"`
				} `json:"metrics"`
			} `json:"consumers"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Consumers) != 1 {
			t.Fatalf("%s on %s: %v\n%s", user, stream, err, out)
		}
		values := map[string]*float64{}
		for _, m := range rep.Consumers[0].Metrics {
			values[m.Name] = m.Value
		}
		return code, values, took
	}
	for _, stream := range []string{"ORD", "ORDN"} {
		adminCode, admin, _ := check("admin", stream)
		code, got, took := check("check", stream)
		t.Logf("consumer check as the documented user on %s (allow_direct %v): exit %d in %s", stream, stream == "ORD", code, took.Round(time.Millisecond))
		if adminCode != 2 || code != adminCode {
			t.Errorf("%s: the documented user's exit %d, the administrator's %d (want 2, CRITICAL, for both)", stream, code, adminCode)
		}
		if got["lag"] == nil || admin["lag"] == nil || *got["lag"] != 18 || *admin["lag"] != 18 {
			t.Errorf("%s: lag %v (administrator %v), want 18", stream, got["lag"], admin["lag"])
		}
		// Both measure the age of the oldest eu message (sequence 11), a
		// little later for the second run: never unknown, never 0.
		if got["lag_time"] == nil || admin["lag_time"] == nil || *got["lag_time"] <= 0 || *got["lag_time"] < *admin["lag_time"] {
			t.Errorf("%s: lag_time %v (administrator %v)", stream, got["lag_time"], admin["lag_time"])
		}
		if took >= timeout {
			t.Errorf("%s: the check took %s, as long as --timeout %s: it waited on a refused request", stream, took, timeout)
		}
	}
}

// TestCheckLabelsUnique (issue 27, finding 4: '=' became '_', so streams
// "q=1" and "q_1" both reported q_1.x.lag): every Nagios performance label
// and every Prometheus label set of a check over names the server accepts
// is distinct, and reads back to its stream, consumer and metric.
func TestCheckLabelsUnique(t *testing.T) {
	s := testserver.Start(t)
	js, err := jetstream.New(testserver.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testserver.Context(t, time.Minute)
	streams := []string{"q=1", "q_1", "q==1", "a|b", "a'b", "c\x01d"}
	consumers := []string{"x", "x=y", "x_y", "x'y", "x|y", "x\u00e9", "x\x7f"}
	for i, st := range streams {
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: st, Subjects: []string{fmt.Sprintf("lab%d.>", i)}}); err != nil {
			t.Fatal(err)
		}
		for _, c := range consumers {
			if _, err := js.CreateConsumer(ctx, st, jetstream.ConsumerConfig{Durable: c, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
				t.Fatal(err)
			}
		}
	}
	run := func(format string) string {
		code, out, stderr, _ := runJSCTL(t, "-s", s.ClientURL(), "consumer", "check", "--streams", "*", "--all", "--format", format, "--perfdata", "all")
		if code != 0 {
			t.Fatalf("%s: exit %d, stderr %q", format, code, stderr)
		}
		return out
	}
	want := map[string]bool{}
	for _, st := range streams {
		for _, c := range consumers {
			want[st+"\x00"+c] = true
		}
	}
	// Nagios: 'label'=value or label=value, labels STREAM.CONSUMER.metric.
	first := strings.SplitN(run("nagios"), "\n", 2)[0]
	_, perf, ok := strings.Cut(first, " | ")
	if !ok {
		t.Fatalf("no performance data: %s", first)
	}
	seen, lagged := map[string]bool{}, map[string]bool{}
	for _, item := range perfItems(t, perf) {
		if seen[item] {
			t.Errorf("nagios label %q appears twice", item)
		}
		seen[item] = true
		parts := strings.Split(item, ".")
		if len(parts) != 3 {
			t.Errorf("nagios label %q is not STREAM.CONSUMER.metric", item)
			continue
		}
		st, c := unescapeName(t, parts[0]), unescapeName(t, parts[1])
		if !want[st+"\x00"+c] {
			t.Errorf("nagios label %q reads back as stream %q, consumer %q: not a pair checked", item, st, c)
		}
		if parts[2] == "lag" {
			lagged[st+"\x00"+c] = true
		}
	}
	if len(lagged) != len(want) {
		t.Errorf("nagios: lag labels for %d pairs, want %d", len(lagged), len(want))
	}
	// Prometheus: the labels of one gauge are distinct and read back.
	pairs := map[string]bool{}
	lag := regexp.MustCompile(`^jsctl_consumer_lag_messages\{stream="((?:[^"\\]|\\.)*)",consumer="((?:[^"\\]|\\.)*)"\} `)
	for _, line := range strings.Split(run("prometheus"), "\n") {
		m := lag.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		st, c := unescapeName(t, promUnescape(m[1])), unescapeName(t, promUnescape(m[2]))
		key := st + "\x00" + c
		if pairs[key] {
			t.Errorf("prometheus: stream %q, consumer %q twice", st, c)
		}
		pairs[key] = true
	}
	if len(pairs) != len(streams)*len(consumers) {
		t.Errorf("prometheus: %d distinct consumers, want %d", len(pairs), len(streams)*len(consumers))
	}
}

// perfItems splits Nagios performance data into its labels, unquoted.
func perfItems(t *testing.T, perf string) []string {
	t.Helper()
	var out []string
	for perf != "" {
		var label string
		if strings.HasPrefix(perf, "'") {
			end := 1
			for {
				i := strings.Index(perf[end:], "'")
				if i < 0 {
					t.Fatalf("unterminated label in %q", perf)
				}
				end += i
				if end+1 < len(perf) && perf[end+1] == '\'' {
					end += 2 // a doubled quote
					continue
				}
				break
			}
			label = strings.ReplaceAll(perf[1:end], "''", "'")
			perf = perf[end+1:]
		} else {
			i := strings.Index(perf, "=")
			label, perf = perf[:i], perf[i:]
		}
		if !strings.HasPrefix(perf, "=") {
			t.Fatalf("label %q not followed by '=': %q", label, perf)
		}
		out = append(out, label)
		if i := strings.Index(perf, " "); i >= 0 {
			perf = perf[i+1:]
		} else {
			perf = ""
		}
	}
	return out
}

// unescapeName reverses Escape (and the \u007c and \u003d of Nagios).
func unescapeName(t *testing.T, s string) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 >= len(s) {
			t.Fatalf("%q ends in a backslash", s)
		}
		switch s[i+1] {
		case '\\':
			b.WriteByte('\\')
			i++
		case 'n', 't', 'r':
			b.WriteByte(map[byte]byte{'n': '\n', 't': '\t', 'r': '\r'}[s[i+1]])
			i++
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[i+1]]
			var v int
			if _, err := fmt.Sscanf(s[i+2:i+2+n], "%x", &v); err != nil {
				t.Fatalf("bad escape in %q: %v", s, err)
			}
			if s[i+1] == 'x' {
				b.WriteByte(byte(v))
			} else {
				b.WriteRune(rune(v))
			}
			i += 1 + n
		default:
			t.Fatalf("unknown escape in %q", s)
		}
	}
	return b.String()
}

// promUnescape reverses the text format's escaping of a label value.
func promUnescape(s string) string {
	return strings.NewReplacer(`\\`, `\`, `\"`, `"`, `\n`, "\n").Replace(s)
}

// TestCheckUnknownFormats: a lag time that cannot be read (the user may
// read no message of the stream) is UNKNOWN with a threshold on it, naming
// the refused subject; U in the Nagios performance data; left out of the
// Prometheus text; and without a threshold, unknown in the summary while
// the status is what the other values make it.
func TestCheckUnknownFormats(t *testing.T) {
	url := figureServer(t, []string{"$JS.API.DIRECT.GET.ORD", "$JS.API.STREAM.MSG.GET.ORD"})
	check := func(args ...string) (int, string) {
		code, out, stderr, _ := runJSCTL(t, append([]string{"-s", url, "--user", "u", "--password", "pw", "consumer", "check", "ORD", "bill"}, args...)...)
		if stderr != "" && code != 3 {
			t.Errorf("%v: stderr %q", args, stderr)
		}
		return code, out
	}
	code, out := check("--lag-time-crit", "1m")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := `UNKNOWN: ORD/bill: lag time unknown: find the oldest message consumer "bill" can still receive on "ORD": permission denied: this user may not get messages of stream "ORD" (the server refused a publish to "$JS.API.STREAM.MSG.GET.ORD") (unknown)`
	if code != 3 || len(lines) != 2 || !strings.HasPrefix(lines[0], "UNKNOWN: 1 consumer on ORD: 1 unknown (bill) | ") ||
		!strings.Contains(lines[0], " ORD.bill.lag_time=U;;60;0 ") || lines[1] != want {
		t.Errorf("nagios: exit %d\n%s\nwant exit 3, lag_time=U and the line\n%s", code, out, want)
	}
	code, out = check("--lag-time-crit", "1m", "--format", "prometheus")
	if code != 3 || !strings.Contains(out, `jsctl_consumer_check_status{stream="ORD",consumer="bill"} 3`) ||
		strings.Contains(out, "jsctl_consumer_lag_seconds{") || !strings.Contains(out, `jsctl_consumer_lag_messages{stream="ORD",consumer="bill"} 17`) {
		t.Errorf("prometheus: exit %d\n%s", code, out)
	}
	code, out = check("--lag-warn", "100")
	if code != 0 || !strings.Contains(out, "OK: ORD/bill: lag 17 messages (lag time unknown)") || !strings.Contains(out, "ORD.bill.lag_time=U;;;0") {
		t.Errorf("without a lag time threshold: exit %d\n%s", code, out)
	}
}
