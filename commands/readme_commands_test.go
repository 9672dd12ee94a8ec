package commands_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/embedded"
	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// readmeCase says how a jsctl command line of README.md and docs/ is
// checked (the lines of other programs, nats and nats-server in the
// README's quick start, are not run: neither is installed here). Every
// command line in the pages' code blocks (```sh lines starting with
// "jsctl ", and "$ jsctl ..." lines of output blocks) must have an entry,
// keyed by the line as written (without its trailing "# comment" and "&"),
// and every entry must still be in the README: a README change that adds
// a command fails TestReadmeCommands until it is covered here.
//
// The line runs in bash, in README order, in one working directory, with the
// test binary as jsctl on PATH, against readmeFixture: a server (NATS_URL)
// with stream ORDERS (orders.>, 50 messages with Nats-Msg-Id order-1185 to
// order-1234, on orders.us and orders.eu in turn; payloads
// {"id":"A-1185","total":1}), the durable pull consumers "billing",
// "loader", "shipping" and "refunds", "eu" and "us" (filtered; "us" has
// handled the first three orders.us messages), "worker", the paused consumer
// "audit", an unfinished recreate of the consumer "archive" (deleted, not
// yet created again) and stream DEAD (dead.>, for dead letters); $DIR is
// the store of
// `jsctl demo --messages 30 --gap 50ms --keep`; ./data holds a stream ORDERS
// for the serve example. Stubs for jq, curl and psql are on PATH.
type readmeCase struct {
	exit int // the exit code the README implies
	// synopsis marks a syntax line (placeholders in capitals, optional
	// parts in brackets); run, if set, is a concrete form that is run.
	synopsis bool
	// run replaces the line, for a reason given in why (a command that
	// would run until stopped, a shell variable of another shell).
	run string
	why string
	// background runs the line as a server until the next line has run;
	// the first line it prints is a URL whose port becomes $PORT.
	background bool
}

var readmeCases = map[string]readmeCase{
	"jsctl version": {},

	// The README's five minutes with a server of one's own: the stream and
	// the consumer "worker" are the fixture's, and $MARK the moment after
	// its 25th message (TestReadmeWalkthroughAnySpeed runs the section as
	// written, with its nats lines, steps hours apart).
	"jsctl seek ORDERS \"$MARK\" --around 2":                                               {},
	"jsctl consumer reset ORDERS worker --to-time \"$MARK\"":                               {},
	"jsctl consumer reset ORDERS worker --to-time \"$MARK\" --execute --yes":               {},
	"jsctl consumer reset ORDERS worker --to-time \"$MARK\" --forget-acks --execute --yes": {},
	"jsctl consumer history ORDERS worker":                                                 {},
	"jsctl consume ORDERS worker --exec 'cat; echo' --idle 2s":                             {},

	// The kept demo store ($DIR); their output blocks are compared by shape.
	"jsctl --embedded $DIR stream timeline ORDERS --buckets 6":                       {},
	"jsctl --embedded $DIR consumer ls ORDERS":                                       {},
	"jsctl --embedded $DIR consumer info ORDERS billing":                             {},
	"jsctl --embedded $DIR consumer history ORDERS billing":                          {},
	"jsctl --embedded $DIR acks stats":                                               {},
	"jsctl --embedded $DIR acks ls --scope ORDERS.billing --from-seq 14 --to-seq 17": {},

	"jsctl seek STREAM TIME [--mode after|before|nearest] [--subject FILTER] [--around N] [--strategy auto|server|bisect]": {
		synopsis: true, run: "jsctl seek ORDERS now --mode nearest --subject 'orders.>' --around 1 --strategy bisect"},
	`jsctl seek ORDERS "2026-11-29 10:00" --around 1`: {},
	"jsctl stream timeline STREAM [--since T] [--until T] [--buckets N] [--subject F] [--strategy auto|server|bisect]": {
		synopsis: true, run: "jsctl stream timeline ORDERS --since -1h --until now --buckets 3 --subject 'orders.>' --strategy server"},
	"jsctl stream timeline ORDERS --since -2h --buckets 4": {},

	"jsctl consumer ls ORDERS":                                                   {},
	"jsctl consumer info ORDERS billing":                                         {},
	`jsctl consumer reset ORDERS billing --to-time "2026-11-29 10:00"`:           {},
	`jsctl consumer reset ORDERS billing --to-time "2026-11-29 10:00" --execute`: {},
	"jsctl consumer reset ORDERS --all --by-duration 90m --export plan.json":     {},
	"jsctl consumer reset --from-file plan.json --execute":                       {},
	"jsctl consumer history ORDERS billing":                                      {},
	"jsctl consumer reset ORDERS billing --to-previous --execute":                {},
	"jsctl consumer recover ORDERS billing --execute":                            {},
	// Interactive: without a terminal (as here) they refuse at once, exit 2;
	// TestPickPTY and TestPickLeaveAndManners drive them on a terminal.
	"jsctl pick":                             {exit: 2, why: "interactive: needs a terminal (TestPickPTY)"},
	"jsctl consumer reset ORDERS billing -i": {exit: 2, why: "interactive: needs a terminal (TestPickLeaveAndManners)"},
	"jsctl seek ORDERS --interactive":        {exit: 2, why: "interactive: needs a terminal (TestPickLeaveAndManners)"},
	"jsctl consumer reset ORDERS billing --to-time -1h --show-messages 4": {},

	"jsctl consumer reset ORDERS loader --to-consumer billing --execute": {},
	"jsctl consumer reset ORDERS billing --to-seq 20 --pause --execute":  {},
	"jsctl consumer reset ORDERS billing --to-seq 20 --pause":            {},
	"jsctl consumer reset --streams 'ORD*' --all --to-latest --pause":    {},
	"jsctl consumer reset ORDERS workers --to-ack-floor --unpin --execute": {
		run: "jsctl consumer reset ORDERS billing --to-ack-floor --unpin --execute", why: "the fixture has no consumer with priority groups (TestResetPriorityPinned has one)"},
	"jsctl consumer reset ORDERS eu --to-consumer us --execute": {exit: 5,
		run: "jsctl consumer reset ORDERS us --to-seq 6 --execute >/dev/null && jsctl consumer reset ORDERS eu --to-earliest --execute >/dev/null && jsctl consumer reset ORDERS eu --to-consumer us --execute",
		why: "earlier README lines move every consumer: us is moved to sequence 6, past its first us orders, and eu before the first eu order"},
	"jsctl consumer reset --streams 'ORD*' --all --to-ack-floor --pause --execute": {},
	"jsctl consumer recover ORDERS":           {},
	"jsctl consumer recover ORDERS --execute": {},

	"jsctl consume ORDERS billing --exec './bill.sh' --workers 8": {
		run: "jsctl consume ORDERS billing --exec './bill.sh' --workers 8 --idle 1s", why: "without --idle it runs until stopped"},
	"jsctl consume ORDERS billing --exec 'jq .total >> totals' --idle 10s --json": {
		run: "jsctl consume ORDERS billing --exec 'jq .total >> totals' --idle 1s --json", why: "a shorter --idle keeps the test fast"},
	`jsctl consume ORDERS billing --exec 'curl -fsS --data-binary @- "$URL"' --key-header Order-Id`: {
		run: `jsctl consume ORDERS billing --exec 'curl -fsS --data-binary @- "$URL"' --key-header Order-Id --idle 1s`, why: "without --idle it runs until stopped"},

	"jsctl consume ORDERS billing --batch 100 --exec './load-batch.sh'": {
		run: "jsctl consume ORDERS billing --batch 100 --exec './load-batch.sh' --idle 1s", why: "without --idle it runs until stopped"},
	`jsctl consume ORDERS loader --batch 500 --exec 'jq -r "[.seq, .data] | @csv" | psql "$DB" -v ON_ERROR_STOP=1 -c "\copy orders_raw(seq, doc) FROM pstdin WITH (FORMAT csv)"'`: {
		run: `jsctl consume ORDERS loader --batch 500 --idle 1s --exec 'jq -r "[.seq, .data] | @csv" | psql "$DB" -v ON_ERROR_STOP=1 -c "\copy orders_raw(seq, doc) FROM pstdin WITH (FORMAT csv)"'`, why: "without --idle it runs until stopped"},
	`jsctl consume ORDERS loader --batch 100 --exec 'jq -c "{seq, ok: ((.data | fromjson | .total) != null)}"'`: {
		run: `jsctl consume ORDERS loader --batch 100 --idle 1s --exec 'jq -c "{seq, ok: ((.data | fromjson | .total) != null)}"'`, why: "without --idle it runs until stopped"},

	"jsctl acks ls [--scope ORDERS.billing] [--state claim|done|failed] [--from-seq N] [--to-seq N] [--since T] [--until T]": {
		synopsis: true, run: "jsctl acks ls --scope ORDERS.billing --state done --from-seq 40 --to-seq 45 --since -1h --until now"},
	"jsctl acks get ORDERS.billing order-1234": {},
	"jsctl acks get ORDERS.billing --seq 42":   {},
	"jsctl acks stats [--scope ORDERS.billing]": {
		synopsis: true, run: "jsctl acks stats --scope ORDERS.billing"},
	"jsctl acks forget --scope ORDERS.billing --from-seq 100 --to-seq 200":           {},
	"jsctl acks forget --scope ORDERS.billing --from-seq 100 --to-seq 200 --execute": {},
	"jsctl acks forget --scope ORDERS.billing --corrupt --execute":                   {},
	"jsctl acks compact [--scope ORDERS.billing]": {
		synopsis: true, run: "jsctl acks compact --scope ORDERS.billing"},

	// Key specs, retention, policies, dead letters and retry.
	"jsctl consume ORDERS shipping --exec ./ship.sh --key subject:2 --key json:id --key-required": {
		run: "jsctl consume ORDERS shipping --exec ./ship.sh --key subject:2 --key json:id --key-required --idle 1s", why: "without --idle it runs until stopped"},
	"jsctl acks get ORDERS.shipping 'eu|A-1234'": {},
	"jsctl consume ORDERS billing --exec ./bill.sh --retention 30d": {
		run: "jsctl consume ORDERS billing --exec ./bill.sh --retention 30d --idle 1s", why: "without --idle it runs until stopped"},
	"jsctl acks stats --scope ORDERS.billing": {},
	"jsctl consume ORDERS billing --exec ./bill.sh --metrics-listen 127.0.0.1:9464": {
		run: "jsctl consume ORDERS billing --exec ./bill.sh --metrics-listen 127.0.0.1:0 --idle 1s", why: "without --idle it runs until stopped; a test never takes a fixed port"},
	"jsctl consume ORDERS billing --exec ./bill.sh --idle 2s --log-format json": {},
	"jsctl consume ORDERS billing --exec ./bill.sh --on-duplicate run --on-mismatch fail": {
		run: "jsctl consume ORDERS billing --exec ./bill.sh --on-duplicate run --on-mismatch fail --idle 1s", why: "without --idle it runs until stopped"},
	"jsctl consume ORDERS refunds --exec ./refund.sh --max-failures 5 --dead-letter dead.orders": {exit: 1,
		run: `jsctl consume ORDERS refunds --exec 'test "$JSCTL_KEY" != order-1234' --max-failures 1 --dead-letter dead.orders --idle 1s`,
		why: "a command failing for order-1234 leaves a dead letter and a failed record for the retry examples (exit 1: a message failed)"},
	"jsctl acks retry --scope S (--seq N | --key K | --all-failed) --exec CMD [--batch N] [--stream S] [--dead-letter SUBJECT] [--stop-timeout D] [--execute]": {
		synopsis: true, run: "jsctl acks retry --scope ORDERS.refunds --seq 50 --exec ./refund.sh --batch 10 --stream ORDERS --dead-letter dead.orders"},
	"jsctl acks retry --scope ORDERS.refunds --all-failed --exec ./refund.sh":                      {},
	"jsctl acks retry --scope ORDERS.refunds --key order-1234 --exec ./refund.sh --execute --json": {},
	"jsctl acks retry --scope ORDERS.refunds --all-failed --exec ./refund.sh --execute":            {},

	// The directories do not exist in the fixture's home: the mkdir -p line
	// above each is what makes the install work for a user without root.
	"jsctl completion bash > ~/.local/share/bash-completion/completions/jsctl": {
		run: "mkdir -p ~/.local/share/bash-completion/completions && jsctl completion bash > ~/.local/share/bash-completion/completions/jsctl", why: "the README's line before it creates the directory"},
	"jsctl completion zsh > ~/.zfunc/_jsctl": {
		run: "mkdir -p ~/.zfunc && jsctl completion zsh > ~/.zfunc/_jsctl", why: "the README's line before it creates the directory"},
	"jsctl completion fish > ~/.config/fish/completions/jsctl.fish": {
		run: "mkdir -p ~/.config/fish/completions && jsctl completion fish > ~/.config/fish/completions/jsctl.fish", why: "the README's line before it creates the directory"},

	// The audit trail (docs/audit.md runs last: the pages before it made
	// the events it lists).
	"jsctl audit ORDERS --since -1d":                                                                   {},
	"jsctl audit ORDERS billing --action reset --json":                                                 {},
	"jsctl audit ORDERS --since -1d --by alice":                                                        {},
	`jsctl consumer reset ORDERS billing --to-seq 5 --execute --reason "replay after the billing bug"`: {},
	"jsctl consumer pause ORDERS billing --for 10m --audit required --execute":                         {},
	`jsctl audit --follow --json | jq -c 'select(.action == "reset")' | while read -r ev; do curl -s -d "$ev" "$WEBHOOK"; done`: {
		synopsis: true, run: `jsctl audit --json | jq -c 'select(.action == "reset")'`, why: "--follow runs until Ctrl-C, and the webhook is the reader's"},

	// Consumer positions. The fixture's consumer "audit" is paused, so a
	// check with --paused-warn is a WARNING (exit 1).
	"jsctl consumer pause ORDERS billing --for 30m --execute":                          {},
	"jsctl consumer resume ORDERS billing --execute":                                   {},
	"jsctl consumer pause ORDERS billing --for 30m":                                    {},
	"jsctl consumer check ORDERS --all --lag-warn 1000 --lag-crit 10000 --paused-warn": {exit: 1},
	"jsctl consumer check --streams 'ORD*' --all --format prometheus > /var/lib/node_exporter/jsctl.prom": {
		run: "jsctl consumer check --streams 'ORD*' --all --format prometheus > jsctl.prom", why: "/var/lib/node_exporter is not the test's to write"},
	`jsctl consumer snapshot save pre-deploy ORDERS --all --description "before billing v2.4"`: {},
	"jsctl consumer snapshot ls ORDERS":                                    {},
	"jsctl consumer snapshot show pre-deploy":                              {},
	"jsctl consumer snapshot restore pre-deploy --execute":                 {},
	"jsctl consumer snapshot restore pre-deploy":                           {},
	"jsctl consumer snapshot restore pre-deploy billing --pause --execute": {},
	"jsctl consumer snapshot restore NAME [CONSUMER...] [--from-file FILE] [--forget-acks] [--pause] [--execute]": {
		synopsis: true, run: "jsctl consumer snapshot restore exported billing --from-file snap.json --forget-acks --pause --execute"},
	"jsctl consumer snapshot rm pre-deploy --execute": {},
	"jsctl consumer pause STREAM [CONSUMER... | --all] [--until TIME | --for DURATION] [--execute]": {
		synopsis: true, run: "jsctl consumer pause ORDERS billing --until +1h --execute && jsctl consumer resume ORDERS billing --execute"},
	"jsctl consumer pause --streams GLOB... --all [--until TIME | --for DURATION] [--execute]": {
		synopsis: true, run: "jsctl consumer pause --streams 'ORD*' --all --for 1h"},
	"jsctl consumer resume STREAM [CONSUMER... | --all] [--execute]": {
		synopsis: true, run: "jsctl consumer resume ORDERS billing --execute"},
	"jsctl consumer resume --streams GLOB... --all [--execute]": {
		synopsis: true, run: "jsctl consumer resume --streams 'ORD*' --all"},
	"jsctl consumer check STREAM [CONSUMER... | --all] [thresholds] [--format nagios|prometheus|json]": {
		synopsis: true, run: "jsctl consumer check ORDERS billing --lag-time-warn 1d --format json"},
	"jsctl consumer check --streams GLOB... --all [thresholds] ...": {
		synopsis: true, run: "jsctl consumer check --streams 'ORD*' --all --waiting-warn 5"},
	"jsctl consumer check ORDERS --all --lag-warn 500 --lag-crit 5000 --paused-warn": {exit: 1},
	"jsctl consumer check ORDERS billing --lag-warn 10 --format prometheus":          {exit: 1},
	"jsctl consumer snapshot save NAME STREAM [CONSUMER... | --all] [--description TEXT] [--export FILE]": {
		synopsis: true, run: "jsctl consumer snapshot save exported ORDERS billing --description test --export snap.json"},
	"jsctl consumer snapshot save NAME --streams GLOB... --all ...": {
		synopsis: true, run: "jsctl consumer snapshot save globbed --streams 'ORD*' --all"},
	"jsctl consumer snapshot ls [STREAM]":                          {synopsis: true, run: "jsctl consumer snapshot ls ORDERS"},
	"jsctl consumer snapshot show NAME":                            {synopsis: true, run: "jsctl consumer snapshot show exported"},
	"jsctl consumer snapshot rm NAME [--execute]":                  {synopsis: true, run: "jsctl consumer snapshot rm globbed --execute"},
	"jsctl consumer snapshot ls":                                   {},
	"jsctl consumer ls --streams 'ORD*' --streams PAYMENTS":        {},
	"jsctl consumer ls --streams 'ORD*'":                           {},
	"jsctl consumer check --streams '*' --all --lag-time-crit 10m": {},
	"jsctl consumer snapshot save nightly --streams '*' --all":     {},

	"jsctl serve --store ./data --addr 127.0.0.1:0": {background: true},
	"jsctl -s nats://127.0.0.1:PORT seek ORDERS -1h": {
		run: "jsctl -s nats://127.0.0.1:$PORT seek ORDERS -1h", why: "PORT is the port serve printed"},
	"jsctl --embedded ./data seek ORDERS -1h": {},
}

// readmeCommand is one command line of the README, with the output block
// that follows it when the README shows one.
type readmeCommand struct {
	line   string
	output []string
}

// docPages are the pages whose command lines TestReadmeCommands runs, in
// the order it runs them: the README, then docs/ in the order a reader of
// the old single manual met them (later pages use state earlier ones made).
// Every page under docs/ must be listed (TestDocPagesListed).
var docPages = []string{
	"README.md",
	"docs/tour.md", "docs/seek.md", "docs/reset.md", "docs/pick.md", "docs/positions.md",
	"docs/consume.md", "docs/performance.md", "docs/completion.md", "docs/connecting.md",
	"docs/permissions.md", "docs/times.md", "docs/guarantees.md", "docs/server-versions.md",
	"docs/exit-codes.md", "docs/development.md", "docs/failover.md", "docs/audit.md",
}

// readmeCommands extracts the command lines of the code blocks of every
// page in docPages that exists. The demo's own transcript (the block
// starting "jsctl demo:") is left out: testdata/script/demo.txtar runs the
// demo and compares its output.
func readmeCommands(t *testing.T) []readmeCommand {
	t.Helper()
	var out []readmeCommand
	for _, page := range docPages {
		b, err := os.ReadFile(filepath.Join("..", page))
		if errors.Is(err, os.ErrNotExist) && page != "README.md" {
			continue // a page still to be written; TestDocPagesListed checks the others
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pageCommands(string(b))...)
	}
	return out
}

// pageCommands extracts the command lines of one page's code blocks.
func pageCommands(page string) []readmeCommand {
	var out []readmeCommand
	blocks := regexp.MustCompile("(?s)```(\\w*)\n(.*?)```").FindAllStringSubmatch(page, -1)
	for _, blk := range blocks {
		lines := strings.Split(strings.TrimRight(blk[2], "\n"), "\n")
		if strings.HasPrefix(lines[0], "jsctl demo:") {
			continue
		}
		var cur *readmeCommand
		for _, l := range lines {
			switch {
			case strings.HasPrefix(l, "$ jsctl "):
				out = append(out, readmeCommand{line: strings.TrimPrefix(l, "$ ")})
				cur = &out[len(out)-1]
			case cur != nil:
				cur.output = append(cur.output, l)
			case strings.HasPrefix(strings.TrimSpace(l), "jsctl "):
				line := strings.TrimSpace(l)
				if i := strings.Index(line, "  #"); i >= 0 {
					line = strings.TrimSpace(line[:i])
				}
				line = strings.TrimSpace(strings.TrimSuffix(line, "&"))
				out = append(out, readmeCommand{line: line})
			}
		}
	}
	return out
}

// TestReadmeCommandsListed: every README command line has an entry in
// readmeCases, and every entry is still in the README. It needs no server.
func TestReadmeCommandsListed(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range readmeCommands(t) {
		seen[c.line] = true
		if _, ok := readmeCases[c.line]; !ok {
			t.Errorf("README.md command line not covered by a test: %q\n\tadd it to readmeCases in commands/readme_commands_test.go with the exit code the README implies", c.line)
		}
	}
	for line := range readmeCases {
		if !seen[line] {
			t.Errorf("readmeCases lists %q, which README.md no longer shows: remove it", line)
		}
	}
}

// TestReadmeCommands runs every README command line against the fixture and
// checks its exit code; where the README shows output, the output's shape
// (table headers and "Label:" lines) must match.
func TestReadmeCommands(t *testing.T) {
	t.Parallel() // mostly waits (on processes, servers, timers): runs beside the others
	if testing.Short() {
		t.Skip("runs every README command")
	}
	cmds := readmeCommands(t)
	f := newReadmeFixture(t)
	var bg *exec.Cmd
	stopBG := func() {
		if bg != nil {
			_ = bg.Process.Signal(syscall.SIGTERM)
			_ = bg.Wait()
			bg = nil
		}
	}
	defer stopBG()
	for _, c := range cmds {
		rc, ok := readmeCases[c.line]
		if !ok {
			continue // TestReadmeCommandsListed reports it
		}
		line := c.line
		if rc.run != "" {
			line = rc.run
		} else if rc.synopsis {
			continue
		}
		if rc.background {
			bg = f.background(line)
			continue
		}
		code, stdout, stderr := f.run(line)
		stopBG()
		if code != rc.exit {
			t.Errorf("README command %q exited %d, want %d\nstdout:\n%s\nstderr:\n%s", line, code, rc.exit, stdout, stderr)
			continue
		}
		if len(c.output) > 0 {
			checkShape(t, c.line, c.output, stdout)
		}
	}
}

// checkShape compares the README's output with the real output by shape:
// every table header line and every "Label:" of the README must be in the
// real output, so a renamed column or label fails the test.
func checkShape(t *testing.T, line string, want []string, got string) {
	t.Helper()
	header := regexp.MustCompile(`^\s*[A-Z][A-Z ]*[A-Z]\s*$`)
	label := regexp.MustCompile(`^([A-Z][A-Za-z ]*):\s`)
	gotLines := strings.Split(got, "\n")
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	for _, w := range want {
		var key string
		switch {
		case header.MatchString(w) && len(strings.Fields(w)) > 1:
			key = norm(w)
		case label.MatchString(w):
			key = label.FindStringSubmatch(w)[1] + ":"
		default:
			continue
		}
		found := false
		for _, g := range gotLines {
			if n := norm(g); n == key || strings.HasPrefix(n, key) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("README output of %q shows %q, which the real output lacks:\n%s", line, strings.TrimSpace(w), got)
		}
	}
}

// readmeFixture is what the README's command lines run against.
type readmeFixture struct {
	t   *testing.T
	dir string
	env []string
	srv *server.Server // the server NATS_URL names
}

func newReadmeFixture(t *testing.T) *readmeFixture {
	t.Helper()
	if _, err := exec.LookPath("jsctl"); err != nil {
		t.Fatalf("jsctl is not in PATH: %v", err)
	}
	s := testserver.Start(t)
	nc := testserver.Connect(t, s)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testserver.Context(t, 60*time.Second)
	fillReadmeStream(t, ctx, js)
	addReadmeReplicas(t, ctx, js)
	for _, name := range []string{"billing", "loader", "shipping", "refunds", "worker"} {
		if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"eu", "us"} {
		if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: f, AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: "orders." + f}); err != nil {
			t.Fatal(err)
		}
	}
	us, err := js.Consumer(ctx, "ORDERS", "us")
	if err != nil {
		t.Fatal(err)
	}
	batch, err := us.Fetch(3, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// A recreate of consumer "archive" killed after its delete: the
	// README's consumer recover examples finish it.
	if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "archive", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	if err := writeIntent(ctx, nc, js, intentSpec{stream: "ORDERS", consumer: "archive", seq: 3, method: reset.Recreate, id: "c0ffee", deleteConsumer: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "DEAD", Subjects: []string{"dead.>"}, Duplicates: time.Hour}); err != nil {
		t.Fatal(err)
	}
	paused := time.Now().Add(24 * time.Hour)
	if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "audit", AckPolicy: jetstream.AckExplicitPolicy, PauseUntil: &paused}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	stubs := filepath.Join(dir, "stubs")
	for _, d := range []string{home, stubs, dir + "/tmp"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string]string{
		filepath.Join(stubs, "jq"):          "#!/bin/sh\ncat >/dev/null\necho 1\n",
		filepath.Join(stubs, "curl"):        "#!/bin/sh\ncat >/dev/null\n",
		filepath.Join(stubs, "psql"):        "#!/bin/sh\ncat >/dev/null\n",
		filepath.Join(dir, "bill.sh"):       "#!/bin/sh\ncat >/dev/null\n",
		filepath.Join(dir, "load-batch.sh"): "#!/bin/sh\ncat >/dev/null\n",
		filepath.Join(dir, "ship.sh"):       "#!/bin/sh\ncat >/dev/null\n",
		filepath.Join(dir, "refund.sh"):     "#!/bin/sh\ncat >/dev/null\n",
	} {
		if err := os.WriteFile(name, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// $MARK: the README's moment between the two batches of orders, here
	// just after the fixture's 25th message.
	m25, err := js.Stream(ctx, "ORDERS")
	if err != nil {
		t.Fatal(err)
	}
	raw25, err := m25.GetMsg(ctx, 25)
	if err != nil {
		t.Fatal(err)
	}
	f := &readmeFixture{t: t, dir: dir, srv: s, env: append(os.Environ(),
		"MARK="+raw25.Time.Add(time.Nanosecond).UTC().Format(time.RFC3339Nano), "NATS_URL="+s.ClientURL(), "HOME="+home, "XDG_CONFIG_HOME="+home+"/.config", "JSCTL_TZ=UTC", "NATS_CONTEXT=",
		"JSCTL_EMBEDDED=", "TMPDIR="+dir+"/tmp", "URL=http://127.0.0.1:1/", "PATH="+stubs+string(os.PathListSeparator)+os.Getenv("PATH"),
	)}
	// ./data for the serve example: a store holding stream ORDERS.
	srv, err := embedded.Start(embedded.Options{StoreDir: filepath.Join(dir, "data")})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := jsutil.Connect(ctx, jsutil.ConnectOptions{InProcess: srv})
	if err != nil {
		t.Fatal(err)
	}
	fillReadmeStream(t, ctx, cl.JS)
	cl.Close()
	srv.Shutdown()
	// $DIR: the demo's kept store, as the README says.
	code, out, errOut := f.run("jsctl demo --messages 30 --gap 50ms --keep")
	m := regexp.MustCompile(`store is kept in (\S+)`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("jsctl demo --keep: exit %d\n%s\n%s", code, out, errOut)
	}
	f.env = append(f.env, "DIR="+m[1])
	return f
}

// fillReadmeStream creates stream ORDERS with 50 orders keyed order-1185
// to order-1234.
func fillReadmeStream(t *testing.T, ctx context.Context, js jetstream.JetStream) {
	t.Helper()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 50; i++ {
		m := nats.NewMsg([]string{"orders.eu", "orders.us"}[i%2])
		m.Header.Set(nats.MsgIdHdr, fmt.Sprintf("order-%04d", 1184+i))
		m.Header.Set("Order-Id", fmt.Sprintf("A-%d", 1184+i))
		m.Data = fmt.Appendf(nil, `{"id":"A-%d","total":%d}`, 1184+i, i)
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
}

// run runs line in bash in the fixture's directory.
func (f *readmeFixture) run(line string) (int, string, string) {
	f.t.Helper()
	cmd := exec.Command("bash", "-c", line)
	cmd.Dir, cmd.Env = f.dir, f.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		f.t.Fatalf("README command %q did not finish within 60s", line)
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		f.t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

// background starts line as a server and sets $PORT from the URL it prints.
func (f *readmeFixture) background(line string) *exec.Cmd {
	f.t.Helper()
	cmd := exec.Command("bash", "-c", "exec "+line)
	cmd.Dir, cmd.Env = f.dir, f.env
	out, err := cmd.StdoutPipe()
	if err != nil {
		f.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	r := bufio.NewReader(out)
	url, err := r.ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		f.t.Fatalf("%s printed no URL: %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, r) }()
	m := regexp.MustCompile(`:(\d+)\s*$`).FindStringSubmatch(url)
	if m == nil {
		f.t.Fatalf("%s printed %q, not a URL with a port", line, url)
	}
	f.env = append(f.env, "PORT="+m[1])
	return cmd
}
