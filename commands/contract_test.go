package commands_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/commands"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil/audit"
	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/nats-io/nats.go/jetstream"
)

// contractCase is one command that changes or deletes state, with how to
// put the state back before each try and how to tell whether it changed.
type contractCase struct {
	name string
	args []string // the command line, without --execute, --yes or --dry-run
	// one marks single-object changes (pause, resume, snapshot rm): they
	// act without --execute but ask at a terminal unless --yes.
	one     bool
	prepare func(t *testing.T)
	changed func(t *testing.T) bool
}

// TestChangeContract: every command that changes or deletes state follows
// one contract. Without --execute it prints its plan and changes nothing,
// terminal or not; with --execute at a terminal it asks [y/N]: "n" changes
// nothing (exit 6), "y", "yes" and "Y" apply; --yes skips the question;
// without a terminal --execute applies without reading stdin; --dry-run is
// the explicit default; --yes without --execute is a usage error. The
// single-object changes (pause, resume, snapshot rm) skip the plan step:
// they act without --execute, but ask at a terminal unless --yes.
// (TestPromptPTY drives the same question through a real terminal.)
func TestChangeContract(t *testing.T) {
	t.Parallel() // mostly waits (on processes, servers, timers): runs beside the others
	s := testserver.Start(t)
	nc := testserver.Connect(t, s)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testserver.Context(t, 5*time.Minute)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, err := js.Publish(ctx, "orders.eu", []byte(`{"n":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	// ORDERS_M mirrors ORDERS (consumer copy copies to it).
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS_M", Mirror: &jetstream.StreamSource{Name: "ORDERS"}}); err != nil {
		t.Fatal(err)
	}
	testserver.WaitFor(t, time.Minute, "the mirror to hold 5 messages", func() bool {
		m, err := js.Stream(ctx, "ORDERS_M")
		return err == nil && m.CachedInfo().State.Msgs == 5
	})
	for _, name := range []string{"billing", "refunds", "archive", "lost"} {
		if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Fatal(err)
		}
	}
	run := func(stdin string, terminal bool, args ...string) (int, string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		args = append([]string{"--server", s.ClientURL(), "--tz", "UTC"}, args...)
		code := commands.Run(ctx, args, strings.NewReader(stdin), &out, &errb, terminal)
		return code, out.String(), errb.String()
	}
	var cur *testing.T = t // the (sub)test the helpers report to
	must := func(args ...string) {
		t := cur
		t.Helper()
		if code, out, errOut := run("", false, args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, out, errOut)
		}
	}
	info := func(name string) *jetstream.ConsumerInfo {
		t := cur
		t.Helper()
		c, err := js.Consumer(ctx, "ORDERS", name)
		if err != nil {
			t.Fatal(err)
		}
		return c.CachedInfo()
	}
	// billing's records: 5 done, floor 5; refunds: 5 failed for good.
	must("consume", "ORDERS", "billing", "--exec", "cat >/dev/null", "--max", "5", "--idle", "2s")
	run("", false, "consume", "ORDERS", "refunds", "--exec", "exit 1", "--max", "5", "--max-failures", "1", "--idle", "2s")
	count := func(scope, state string) int {
		t := cur
		t.Helper()
		code, out, errOut := run("", false, "--json", "acks", "ls", "--scope", scope, "--state", state)
		if code != 0 && code != 3 {
			t.Fatalf("acks ls: exit %d %s %s", code, out, errOut)
		}
		return strings.Count(out, `"seq": `)
	}

	changes := 0 // recover's intents, each with its own id
	cases := []contractCase{{
		name:    "consumer reset",
		args:    []string{"consumer", "reset", "ORDERS", "archive", "--to-seq", "3"},
		prepare: func(t *testing.T) { must("consumer", "reset", "ORDERS", "archive", "--to-earliest", "--execute") },
		changed: func(t *testing.T) bool { return info("archive").Delivered.Stream == 2 },
	}, {
		name: "consumer snapshot restore",
		args: []string{"consumer", "snapshot", "restore", "at3", "archive"},
		prepare: func(t *testing.T) {
			must("consumer", "reset", "ORDERS", "archive", "--to-seq", "3", "--execute")
			run("", false, "consumer", "snapshot", "rm", "at3")
			must("consumer", "snapshot", "save", "at3", "ORDERS", "archive")
			must("consumer", "reset", "ORDERS", "archive", "--to-earliest", "--execute")
		},
		changed: func(t *testing.T) bool { return info("archive").Delivered.Stream == 2 },
	}, {
		name: "consumer copy",
		args: []string{"consumer", "copy", "ORDERS", "archive", "--to-stream", "ORDERS_M"},
		prepare: func(t *testing.T) {
			if err := js.DeleteConsumer(ctx, "ORDERS_M", "archive"); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
				t.Fatal(err)
			}
		},
		changed: func(t *testing.T) bool {
			_, err := js.Consumer(ctx, "ORDERS_M", "archive")
			return err == nil
		},
	}, {
		name: "consumer recover",
		args: []string{"consumer", "recover", "ORDERS", "lost"},
		prepare: func(t *testing.T) {
			// A recreate of "lost" killed after its delete (the one a
			// declined try left, or a new one).
			if _, err := js.Consumer(ctx, "ORDERS", "lost"); err == nil {
				changes++
				id := fmt.Sprintf("c0ffee%02d", changes)
				if err := writeIntent(ctx, nc, js, intentSpec{stream: "ORDERS", consumer: "lost", seq: 4, method: reset.Recreate, id: id, deleteConsumer: true}); err != nil {
					t.Fatal(err)
				}
			}
		},
		changed: func(t *testing.T) bool {
			_, err := js.Consumer(ctx, "ORDERS", "lost")
			return err == nil
		},
	}, {
		name: "acks forget",
		args: []string{"acks", "forget", "--scope", "ORDERS.billing", "--from-seq", "4", "--to-seq", "5"},
		prepare: func(t *testing.T) {
			if count("ORDERS.billing", "done") < 5 { // run 4 and 5 again
				must("consumer", "reset", "ORDERS", "billing", "--to-seq", "4", "--execute")
				must("consume", "ORDERS", "billing", "--exec", "cat >/dev/null", "--max", "2", "--idle", "2s")
			}
		},
		changed: func(t *testing.T) bool { return count("ORDERS.billing", "done") < 5 },
	}, {
		name: "acks retry",
		args: []string{"acks", "retry", "--scope", "ORDERS.refunds", "--seq", "1", "--exec", "cat >/dev/null"},
		prepare: func(t *testing.T) {
			if count("ORDERS.refunds", "done") > 0 { // fail it again
				must("acks", "forget", "--scope", "ORDERS.refunds", "--all", "--execute")
				must("consumer", "reset", "ORDERS", "refunds", "--to-earliest", "--execute")
				run("", false, "consume", "ORDERS", "refunds", "--exec", "exit 1", "--max", "5", "--max-failures", "1", "--idle", "2s")
			}
		},
		changed: func(t *testing.T) bool { return count("ORDERS.refunds", "done") > 0 },
	}, {
		name: "acks compact",
		args: []string{"acks", "compact", "--scope", "ORDERS.billing"},
		prepare: func(t *testing.T) {
			if count("ORDERS.billing", "done") < 5 {
				must("consumer", "reset", "ORDERS", "billing", "--to-earliest", "--forget-acks", "--execute")
				must("consume", "ORDERS", "billing", "--exec", "cat >/dev/null", "--max", "5", "--idle", "2s")
			}
			// The floor covers them once the server has the acks.
			testserver.WaitFor(t, time.Minute, "5 compactable records", func() bool {
				_, out, _ := run("", false, "--json", "acks", "stats", "--scope", "ORDERS.billing")
				return strings.Contains(out, `"compactable": 5`)
			})
		},
		changed: func(t *testing.T) bool { return count("ORDERS.billing", "done") < 5 },
	}, {
		name: "consumer pause", one: true,
		args:    []string{"consumer", "pause", "ORDERS", "archive", "--for", "1h"},
		prepare: func(t *testing.T) { must("consumer", "resume", "ORDERS", "archive") },
		changed: func(t *testing.T) bool { return info("archive").Paused },
	}, {
		name: "consumer resume", one: true,
		args:    []string{"consumer", "resume", "ORDERS", "archive"},
		prepare: func(t *testing.T) { must("consumer", "pause", "ORDERS", "archive", "--for", "1h") },
		changed: func(t *testing.T) bool { return !info("archive").Paused },
	}, {
		name: "consumer snapshot rm", one: true,
		args: []string{"consumer", "snapshot", "rm", "gone"},
		prepare: func(t *testing.T) {
			run("", false, "consumer", "snapshot", "rm", "gone")
			must("consumer", "snapshot", "save", "gone", "ORDERS", "archive")
		},
		changed: func(t *testing.T) bool {
			code, _, _ := run("", false, "consumer", "snapshot", "show", "gone")
			return code == commands.ExitNotFound
		},
	}}

	var names []string
	for _, c := range cases {
		names = append(names, c.name)
	}
	slices.Sort(names)
	if want := commands.ChangingCommands(); !slices.Equal(names, want) {
		t.Fatalf("the changing commands (those with --dry-run) are %q; this test has cases for %q: add the missing ones", want, names)
	}
	// events counts the audit events of action (every changing command
	// writes one per object it changed).
	events := func(action audit.Action) uint64 {
		t := cur
		t.Helper()
		st, err := js.Stream(ctx, audit.Stream)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx, jetstream.WithSubjectFilter(audit.SubjectPrefix+"."+string(action)+".>"))
		if err != nil {
			t.Fatal(err)
		}
		var n uint64
		for _, c := range info.State.Subjects {
			n += c
		}
		return n
	}
	with := func(c contractCase, extra ...string) []string {
		return append(append([]string{}, c.args...), extra...)
	}
	execute := func(c contractCase) []string {
		if c.one {
			return nil
		}
		return []string{"--execute"}
	}
	for _, c := range cases {
		action := audit.Action(strings.ReplaceAll(strings.TrimPrefix(c.name, "consumer "), " ", "."))
		if !action.Known() {
			t.Fatalf("%s: no audit action %q", c.name, action)
		}
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			cur = t
			defer func() { cur = nil }()
			// The state is put back before the first try and after each
			// try that changed it (a try that changed nothing left it as
			// prepared, which the check before each try confirms).
			prepared := false
			try := func(what, stdin string, terminal bool, args []string, wantCode int, wantAsked, wantChanged bool) {
				t.Helper()
				if !prepared {
					c.prepare(t)
				}
				prepared = !wantChanged
				if c.changed(t) {
					t.Fatalf("%s: the state is already changed before the try", what)
				}
				had := events(action)
				code, out, errOut := run(stdin, terminal, args...)
				asked := strings.Contains(errOut, "[y/N]")
				if code != wantCode || asked != wantAsked || c.changed(t) != wantChanged {
					t.Fatalf("%s (%v): exit %d (want %d), asked %v (want %v), changed %v (want %v)\nstdout:\n%s\nstderr:\n%s",
						what, args, code, wantCode, asked, wantAsked, c.changed(t), wantChanged, out, errOut)
				}
				if got := events(action); (got > had) != wantChanged {
					t.Fatalf("%s (%v): %d %s audit events written, changed %v: a change writes its event, nothing else does\nstderr:\n%s", what, args, got-had, action, wantChanged, errOut)
				}
			}
			if !c.one {
				try("plan at a terminal", "y\n", true, c.args, 0, false, false)
				try("plan without a terminal", "y\n", false, c.args, 0, false, false)
			}
			try("--dry-run at a terminal", "y\n", true, with(c, "--dry-run"), 0, false, false)
			try("asked, n", "n\n", true, with(c, execute(c)...), commands.ExitCancelled, true, false)
			try("asked, no answer", "", true, with(c, execute(c)...), commands.ExitCancelled, true, false)
			try("asked, y", "y\n", true, with(c, execute(c)...), 0, true, true)
			try("asked, YES", "YES\n", true, with(c, execute(c)...), 0, true, true)
			try("--yes at a terminal", "", true, with(c, append(execute(c), "--yes")...), 0, false, true)
			try("-y at a terminal", "", true, with(c, append(execute(c), "-y")...), 0, false, true)
			try("no terminal", "n\n", false, with(c, execute(c)...), 0, false, true)
			try("--require-reason without a reason", "", true, with(c, append(execute(c), "--yes", "--require-reason")...), commands.ExitUsage, false, false)
			try("--require-reason with --reason", "", true, with(c, append(execute(c), "--yes", "--require-reason", "--reason", "contract")...), 0, false, true)
			try("--audit required", "", true, with(c, append(execute(c), "--yes", "--audit", "required")...), 0, false, true)
			if !c.one {
				try("--yes without --execute", "", true, with(c, "--yes"), commands.ExitUsage, false, false)
				try("--execute with --dry-run", "", true, with(c, "--execute", "--dry-run"), commands.ExitUsage, false, false)
			}
		})
	}
}
