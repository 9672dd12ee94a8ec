package commands

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// logCases gives every command of the model a command line for
// TestEveryCommandLogsJSON, chosen so that most of them write to stderr
// (an error, a warning, a note, a handler's output). {DIR} is a temporary
// directory, {URL} the server's URL with the password. A command missing
// here fails the test.
var logCases = map[string][]string{
	"seek":                      {"seek", "ORDERS", "not-a-time"},
	"stream timeline":           {"stream", "timeline", "NOPE"},
	"pick":                      {"pick"},
	"consumer ls":               {"consumer", "ls", "ORDERS"},
	"consumer info":             {"consumer", "info", "ORDERS", "missing"},
	"consumer reset":            {"consumer", "reset", "ORDERS", "billing", "--to-seq", "3"},
	"consumer history":          {"consumer", "history", "ORDERS", "billing"},
	"consumer recover":          {"consumer", "recover", "ORDERS"},
	"consumer pause":            {"consumer", "pause", "ORDERS", "missing", "--execute"},
	"consumer resume":           {"consumer", "resume", "ORDERS", "missing", "--execute"},
	"consumer check":            {"consumer", "check", "ORDERS", "billing", "--acks-bucket", "JSCTL_ACKS"},
	"consumer snapshot save":    {"consumer", "snapshot", "save", "s1", "ORDERS", "billing"},
	"consumer snapshot ls":      {"consumer", "snapshot", "ls"},
	"consumer snapshot show":    {"consumer", "snapshot", "show", "nosuch"},
	"consumer snapshot rm":      {"consumer", "snapshot", "rm", "nosuch", "--execute"},
	"consumer snapshot restore": {"consumer", "snapshot", "restore", "s1", "billing"},
	"consumer copy":             {"consumer", "copy", "ORDERS", "billing", "--to-stream", "NOPE"},
	"consume": {"consume", "ORDERS", "billing", "--exec", `echo "out $JSCTL_SEQ {URL}"; echo "err $JSCTL_SEQ" >&2; exit 1`,
		"--max-failures", "1", "--max", "3", "--idle", "2s", "--metrics-listen", "127.0.0.1:0"},
	"acks ls":      {"acks", "ls", "--scope", "ORDERS.billing"},
	"acks get":     {"acks", "get", "ORDERS.billing", "no-such-key"},
	"acks forget":  {"acks", "forget", "--scope", "ORDERS.billing", "--all"},
	"acks stats":   {"acks", "stats"},
	"acks compact": {"acks", "compact"},
	"acks retry":   {"acks", "retry", "--scope", "ORDERS.billing", "--all-failed", "--exec", "echo again; echo fails >&2; exit 1", "--execute"},
	"audit":        {"audit", "ORDERS", "--since", "not-a-time"},
	"demo":         {"demo", "--messages", "4", "--gap", "1ms"},
	"serve":        {"serve", "--store", "{DIR}/serve", "--addr", "127.0.0.1:0"},
	"completion":   {"completion", "bash"},
	"version":      {"version"},
	"man":          {"man"},
}

// TestEveryCommandLogsJSON runs every command of the model with
// --log-format json against a server whose URL carries a password: every
// line each writes to stderr is one JSON object with time, level and msg,
// and none (nor stdout) holds the password. Across the table the lines
// include errors, warnings and a handler's output lines with their seq.
func TestEveryCommandLogsJSON(t *testing.T) {
	t.Parallel() // mostly waits (on servers, handlers): runs beside the others
	if testing.Short() {
		t.Skip("runs every command")
	}
	const password = "pw-Hunter2-secret"
	s, err := testserver.NewAuth(t.TempDir(), "LOGS", testserver.Auth{User: "alice", Password: password})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	nc, err := nats.Connect(s.URL, nats.UserInfo("alice", password))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testserver.Context(t, 10*time.Minute)
	testserver.AddStream(t, js, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	for i := 1; i <= 10; i++ {
		if _, err := testserver.Publish(ctx, js, &nats.Msg{Subject: "orders.eu", Data: fmt.Appendf(nil, "order %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	testserver.AddConsumer(t, js, "ORDERS", jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy})
	url := strings.Replace(s.URL, "nats://", "nats://alice:"+password+"@", 1)
	dir := t.TempDir()

	// The commands of the model, each needing a case.
	p, err := newParser(&CLI{}, &Env{}, &bytes.Buffer{}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	var leaves []string
	var walk func(n *kong.Node, path []string)
	walk = func(n *kong.Node, path []string) {
		sub := false
		for _, c := range n.Children {
			if c.Type == kong.CommandNode && !c.Hidden {
				sub = true
				walk(c, append(path, c.Name))
			}
		}
		if !sub && len(path) > 0 {
			leaves = append(leaves, strings.Join(path, " "))
		}
	}
	walk(p.Model.Node, nil)
	for _, l := range leaves {
		if _, ok := logCases[l]; !ok {
			t.Errorf("command %q has no case in logCases (commands/log_commands_internal_test.go): add one", l)
		}
	}
	for l := range logCases {
		if !slices.Contains(leaves, l) {
			t.Errorf("logCases has %q, which is not a command", l)
		}
	}

	levels := map[string]int{}
	handlerLines := 0
	// The order matters: consume and acks retry make the failed records
	// acks ls, forget and snapshot save read.
	order := append([]string{"consume", "acks retry", "consumer snapshot save"}, leaves...)
	done := map[string]bool{}
	for _, name := range order {
		if done[name] || logCases[name] == nil {
			continue
		}
		done[name] = true
		var args []string
		for _, a := range logCases[name] {
			args = append(args, strings.NewReplacer("{DIR}", dir, "{URL}", url).Replace(a))
		}
		args = append([]string{"--log-format", "json", "-s", url, "--tz", "UTC", "--timeout", "2s", "--retry-for", "2s"}, args...)
		runCtx, cancel := context.WithCancel(ctx)
		if name == "serve" {
			cancel() // serves until interrupted: interrupted at once
		}
		var out, errb bytes.Buffer
		code := Run(runCtx, args, strings.NewReader(""), &out, &errb, false)
		cancel()
		if strings.Contains(errb.String()+out.String(), password) {
			t.Errorf("%s: the password was written:\n%s\n%s", name, out.String(), errb.String())
		}
		if errb.Len() == 0 {
			continue
		}
		for _, r := range jsonRecordsOf(t, name, errb.String()) {
			levels[r["level"].(string)]++
			if r["source"] == "handler" && r["seq"] != nil {
				handlerLines++
				if !strings.Contains(fmt.Sprint(r["msg"]), "nats://***@") && r["stream"] == "stdout" && strings.HasPrefix(fmt.Sprint(r["msg"]), "out ") {
					t.Errorf("%s: a handler line with the URL unmasked: %v", name, r)
				}
			}
		}
		t.Logf("%s: exit %d, %d stderr lines", name, code, strings.Count(errb.String(), "\n"))
	}
	if levels["ERROR"] < 5 || levels["WARN"] < 2 || levels["INFO"] < 2 || handlerLines < 6 {
		t.Errorf("too few lines of each kind to show anything: %v, %d handler lines", levels, handlerLines)
	}
}

// jsonRecordsOf is jsonRecords naming the command on failure.
func jsonRecordsOf(t *testing.T, name, out string) []map[string]any {
	t.Helper()
	var recs []map[string]any
	t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) { recs = jsonRecords(t, out) })
	return recs
}
