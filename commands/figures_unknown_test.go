package commands_test

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/commands"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// figureCase is a command that shows figures read from a stream's messages
// (times of positions, lag, counts, sequences for times).
type figureCase struct {
	command string   // its path in the command tree
	args    []string // the command line (--json where it has one)
	// known checks the output of a user who may read messages only by
	// message get (direct gets refused): the figures are there.
	known func(t *testing.T, out string)
	// unknown checks the output of a user who may read no message at all:
	// the figures are null, or the command fails naming the refusal.
	unknown func(t *testing.T, code int, out, stderr string)
}

// figureFree are the commands that show no figure read from a stream's
// messages, and why. TestFiguresKnownOrUnknown fails when a command is in
// neither list, so a new command is classed before it ships.
var figureFree = map[string]string{
	"pick":                      "interactive: its consumer list is reset.List's (consumer ls's case) and its seeks are seek's (TestLagMeansOldestReceivable covers the list)",
	"consumer history":          "prints the positions and times recorded in the history bucket when each change was made",
	"consumer recover":          "its plan is consumer reset's (that case); its state comes from consumer info",
	"consumer pause":            "changes the pause; prints only the time given",
	"consumer resume":           "changes the pause",
	"consumer snapshot ls":      "lists snapshot documents",
	"consumer snapshot rm":      "removes a snapshot document",
	"consumer snapshot restore": "its plan is consumer reset's (that case), and a position whose time is unknown is refused by time (TestSnapshotTimeUnknown)",
	"consumer copy":             "translates a position by the replica's own records; a read it cannot make stops it with the refusal (jsutil/replica)",
	"consume":                   "processes messages; its counts are of what it did",
	"acks ls":                   "reads ack records, not stream messages",
	"acks get":                  "reads an ack record",
	"acks forget":               "deletes ack records",
	"acks stats":                "counts ack records",
	"acks compact":              "rewrites ack records",
	"acks retry":                "republishes messages it reads (a refusal stops it), shows no figure of them",
	"audit":                     "prints the audit events as they were written (positions recorded at the time of each change)",
	"demo":                      "its own embedded server and user",
	"serve":                     "runs a server",
	"completion":                "prints a script",
	"version":                   "prints the version",
	"man":                       "prints the manual",
	"__complete":                "completion candidates (names only)",
}

// commandPaths lists the leaf commands of the CLI ("consumer snapshot save").
func commandPaths(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if _, ok := f.Tag.Lookup("cmd"); !ok {
			continue
		}
		name := f.Tag.Get("name")
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		path := strings.TrimSpace(prefix + " " + name)
		if sub := commandPaths(f.Type, path); len(sub) > 0 {
			out = append(out, sub...)
		} else {
			out = append(out, path)
		}
	}
	return out
}

// TestFiguresKnownOrUnknown (issue 27, "a figure is known or it is
// unknown"): on a stream with allow_direct, every command that shows a
// figure read from the stream's messages shows the true figure to a user
// who may not direct-get but may message-get (switched at once, said once
// on stderr), and to a user who may read no message shows it unknown
// (null, with a warning naming the refused subject) or fails naming it,
// never as 0 or absent; neither waits on a refused request.
func TestFiguresKnownOrUnknown(t *testing.T) {
	t.Parallel() // mostly waits on servers
	const timeout = 10 * time.Second
	denied := `"$JS.API.STREAM.MSG.GET.ORD"`
	cases := []figureCase{
		{command: "consumer ls", args: []string{"consumer", "ls", "ORD", "--json"},
			known: func(t *testing.T, out string) {
				mustNumber(t, out, "0", "lag_ns")
				mustString(t, out, "0", "ack_floor_time")
			},
			unknown: func(t *testing.T, code int, out, stderr string) {
				mustExit(t, code, 0, stderr)
				mustNull(t, out, "0", "lag_ns")
				mustNull(t, out, "0", "ack_floor_time")
				mustWarn(t, stderr, denied)
			}},
		{command: "consumer info", args: []string{"consumer", "info", "ORD", "bill", "--json"},
			known: func(t *testing.T, out string) {
				mustNumber(t, out, "lag_ns")
				mustString(t, out, "ack_floor_time")
				mustString(t, out, "delivered_time")
			},
			unknown: func(t *testing.T, code int, out, stderr string) {
				mustExit(t, code, 0, stderr)
				mustNull(t, out, "lag_ns")
				mustNull(t, out, "ack_floor_time")
				mustWarn(t, stderr, denied)
			}},
		{command: "consumer check", args: []string{"consumer", "check", "ORD", "bill", "--lag-time-crit", "1ms", "--json"},
			known: func(t *testing.T, out string) {
				if v := jsonAt(t, out, "consumers", "0", "metrics", "1", "value"); v == nil || v.(float64) <= 0 {
					t.Errorf("lag_time %v", v)
				}
				if s := jsonAt(t, out, "status"); s != "CRITICAL" {
					t.Errorf("status %v, want CRITICAL", s)
				}
			},
			unknown: func(t *testing.T, code int, out, stderr string) {
				mustExit(t, code, 3, stderr)
				mustNull(t, out, "consumers", "0", "metrics", "1", "value")
				if s := jsonAt(t, out, "status"); s != "UNKNOWN" || !strings.Contains(out, strings.ReplaceAll(denied, `"`, `\"`)) {
					t.Errorf("status %v, want UNKNOWN naming %s: %s", s, denied, out)
				}
			}},
		{command: "consumer snapshot save", args: []string{"consumer", "snapshot", "save", "s1", "ORD", "bill", "--json"},
			known: func(t *testing.T, out string) {
				mustString(t, out, "streams", "0", "consumers", "0", "ack_floor", "time")
			},
			unknown: func(t *testing.T, code int, out, stderr string) {
				mustExit(t, code, 0, stderr)
				mustNull(t, out, "streams", "0", "consumers", "0", "ack_floor", "time")
				if v := jsonAt(t, out, "streams", "0", "consumers", "0", "ack_floor", "time_unknown"); v != true {
					t.Errorf("time_unknown %v, want true", v)
				}
				mustWarn(t, stderr, denied)
			}},
		{command: "consumer snapshot show", args: []string{"consumer", "snapshot", "show", "s0", "--json"},
			known: func(t *testing.T, out string) {
				mustString(t, out, "consumers", "0", "now", "time")
				if _, ok := jsonAt(t, out, "consumers", "0", "moved_ns").(float64); !ok {
					t.Errorf("moved_ns %v, want a number", jsonAt(t, out, "consumers", "0", "moved_ns"))
				}
			},
			unknown: func(t *testing.T, code int, out, stderr string) {
				mustExit(t, code, 0, stderr)
				mustNull(t, out, "consumers", "0", "now", "time")
				mustNull(t, out, "consumers", "0", "moved_ns")
				if !strings.Contains(out, strings.ReplaceAll(denied, `"`, `\"`)) {
					t.Errorf("no warning naming %s: %s", denied, out)
				}
			}},
		{command: "consumer reset", args: []string{"consumer", "reset", "ORD", "bill", "--to-seq", "3", "--json"},
			known: func(t *testing.T, out string) {
				mustString(t, out, "changes", "0", "from", "ack_floor_time")
				mustString(t, out, "changes", "0", "to", "time")
			},
			unknown: func(t *testing.T, code int, out, stderr string) {
				mustExit(t, code, 0, stderr)
				mustNull(t, out, "changes", "0", "from", "ack_floor_time")
				mustNull(t, out, "changes", "0", "to", "time")
				if !strings.Contains(out, strings.ReplaceAll(denied, `"`, `\"`)) {
					t.Errorf("no warning naming %s: %s", denied, out)
				}
			}},
		{command: "stream timeline", args: []string{"stream", "timeline", "ORD", "--subject", "ord.eu", "--json"},
			known: func(t *testing.T, out string) {
				if v := jsonAt(t, out, "total"); v != 18.0 {
					t.Errorf("total %v, want 18", v)
				}
			},
			unknown: func(t *testing.T, code int, out, stderr string) {
				mustExit(t, code, commands.ExitPermission, stderr)
				mustWarn(t, stderr, denied)
			}},
		{command: "seek", args: []string{"seek", "ORD", "now", "--json"},
			known: func(t *testing.T, out string) {
				if v := jsonAt(t, out, "sequence"); v != 30.0 {
					t.Errorf("sequence %v, want 30 (the next to be stored)", v)
				}
			},
			unknown: func(t *testing.T, code int, out, stderr string) {
				mustExit(t, code, commands.ExitPermission, stderr)
				mustWarn(t, stderr, "STREAM.")
			}},
	}
	classed := map[string]bool{}
	for _, c := range cases {
		classed[c.command] = true
	}
	for _, path := range commandPaths(reflect.TypeFor[commands.CLI](), "") {
		if !classed[path] && figureFree[path] == "" {
			t.Errorf("command %q is neither a figure case of this test nor in figureFree (with why it shows no figure read from messages)", path)
		}
		if classed[path] && figureFree[path] != "" {
			t.Errorf("command %q is both a figure case and figure-free", path)
		}
	}

	for _, deny := range [][]string{
		{"$JS.API.DIRECT.GET.ORD"},
		{"$JS.API.DIRECT.GET.ORD", "$JS.API.STREAM.MSG.GET.ORD"},
	} {
		url := figureServer(t, deny)
		for _, c := range cases {
			args := append([]string{"-s", url, "--user", "u", "--password", "pw", "--timeout", timeout.String()}, c.args...)
			code, out, stderr, took := runJSCTL(t, args...)
			name := c.command + map[int]string{1: " (direct gets refused)", 2: " (message reads refused)"}[len(deny)]
			t.Run(name, func(t *testing.T) {
				if took >= timeout {
					t.Errorf("took %s, --timeout %s: it waited on a refused request", took, timeout)
				}
				if len(deny) == 1 {
					mustExit(t, code, map[string]int{"consumer check": 2}[c.command], stderr)
					c.known(t, out)
					notes := strings.Count(stderr, "by direct get")
					if c.command == "consumer check" && stderr != "" || c.command != "consumer check" && notes > 1 {
						t.Errorf("stderr says the switch %d times:\n%s", notes, stderr)
					}
					return
				}
				c.unknown(t, code, out, stderr)
			})
		}
	}
}

// figureServer is a server whose user "u" may not publish to deny, with
// stream ORD (allow_direct, as the nats CLI makes streams): 10 messages on
// ord.us, then 18 on ord.eu and one on ord.us; consumer bill (ord.eu) has
// had its first message acknowledged; snapshot s0 saved it.
func figureServer(t *testing.T, deny []string) string {
	t.Helper()
	s, err := testserver.NewAuth(t.TempDir(), "FIG", testserver.Auth{User: "u", Password: "pw", Deny: deny})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	nc, err := nats.Connect(s.URL, nats.UserInfo("u", "pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testserver.Context(t, time.Minute)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORD", Subjects: []string{"ord.>"}, AllowDirect: true}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 29; i++ {
		subj := "ord.eu"
		if i < 10 || i == 28 {
			subj = "ord.us"
		}
		if _, err := js.Publish(ctx, subj, nil); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := js.CreateConsumer(ctx, "ORD", jetstream.ConsumerConfig{Durable: "bill", AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: "ord.eu"})
	if err != nil {
		t.Fatal(err)
	}
	if err := testserver.Take(cons, 1, 10*time.Second, func(m jetstream.Msg) error { return m.DoubleAck(ctx) }); err != nil {
		t.Fatal(err)
	}
	code, _, stderr, _ := runJSCTL(t, "-s", s.URL, "--user", "u", "--password", "pw", "consumer", "snapshot", "save", "s0", "ORD", "bill")
	if code != 0 {
		t.Fatalf("snapshot save s0: exit %d: %s", code, stderr)
	}
	return s.URL
}

func jsonAt(t *testing.T, out string, path ...string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[p]; !ok {
				keys := make([]string, 0, len(x))
				for k := range x {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				t.Fatalf("no %q in %v (path %v)", p, keys, path)
			}
		case []any:
			i := 0
			for _, r := range p {
				i = i*10 + int(r-'0')
			}
			if i >= len(x) {
				t.Fatalf("index %s past %d elements (path %v)", p, len(x), path)
			}
			v = x[i]
		default:
			t.Fatalf("%v: %q is not in a map or list (path %v)", v, p, path)
		}
	}
	return v
}

func mustNull(t *testing.T, out string, path ...string) {
	t.Helper()
	if v := jsonAt(t, out, path...); v != nil {
		t.Errorf("%v = %v, want null (unknown)", path, v)
	}
}

func mustNumber(t *testing.T, out string, path ...string) {
	t.Helper()
	if v, ok := jsonAt(t, out, path...).(float64); !ok || v <= 0 {
		t.Errorf("%v = %v, want a number above 0", path, jsonAt(t, out, path...))
	}
}

func mustString(t *testing.T, out string, path ...string) {
	t.Helper()
	if v, ok := jsonAt(t, out, path...).(string); !ok || v == "" {
		t.Errorf("%v = %v, want a time", path, jsonAt(t, out, path...))
	}
}

func mustExit(t *testing.T, code, want int, stderr string) {
	t.Helper()
	if code != want {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, want, stderr)
	}
}

func mustWarn(t *testing.T, stderr, what string) {
	t.Helper()
	if !strings.Contains(stderr, what) {
		t.Errorf("stderr does not name %s:\n%s", what, stderr)
	}
}

// TestSnapshotTimeUnknown (issue 27, finding 1: snapshot save stored
// "time": null with no warning, and the snapshot later restored "from the
// stream's first message"): a snapshot whose ack floor time could not be
// read records it as unknown; restoring it by time is refused, naming why,
// and by sequence it restores as usual.
func TestSnapshotTimeUnknown(t *testing.T) {
	url := figureServer(t, []string{"$JS.API.DIRECT.GET.ORD", "$JS.API.STREAM.MSG.GET.ORD"})
	user := []string{"-s", url, "--user", "u", "--password", "pw"}
	code, out, stderr, _ := runJSCTL(t, append(user, "consumer", "snapshot", "save", "s1", "ORD", "bill", "--json")...)
	mustExit(t, code, 0, stderr)
	if v := jsonAt(t, out, "streams", "0", "consumers", "0", "ack_floor", "time_unknown"); v != true {
		t.Fatalf("time_unknown %v", v)
	}
	code, out, stderr, _ = runJSCTL(t, append(user, "consumer", "snapshot", "restore", "s1", "--by-time", "--json")...)
	refused, _ := jsonAt(t, out, "changes", "0", "refused").(string)
	if code != commands.ExitConflict || !strings.Contains(refused, "time of the saved ack floor (sequence 11) is unknown") || strings.Contains(out, "first message") {
		t.Errorf("restore --by-time: exit %d, refused %q; want exit %d refusing the unknown time\n%s\n%s", code, refused, commands.ExitConflict, out, stderr)
	}
	code, out, stderr, _ = runJSCTL(t, append(user, "consumer", "snapshot", "restore", "s1", "--json")...)
	mustExit(t, code, 0, stderr)
	if seq := jsonAt(t, out, "changes", "0", "to", "sequence"); seq != 12.0 {
		t.Errorf("restore by sequence goes to %v, want 12 (the saved ack floor + 1)", seq)
	}
}
