package commands_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
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
	// immediate marks the commands whose old immediate form (--yes without
	// --execute) applies for one more release.
	immediate bool
	prepare   func(t *testing.T)
	changed   func(t *testing.T) bool
	// several is the same change of two consumers, for the commands that
	// take several (nil for those that change one scope or name): its
	// command line, the names its plan shows, and how to prepare and
	// check it.
	several *severalCase
}

// severalCase is a change of several consumers in one run.
type severalCase struct {
	args    []string
	names   []string
	prepare func(t *testing.T)
	changed func(t *testing.T) bool // every one of them changed
	intact  func(t *testing.T) bool // none of them changed
}

// TestChangeContract: every command that changes or deletes state follows
// one contract. Without --execute it prints its plan and changes nothing,
// terminal or not; with --execute at a terminal it asks [y/N] (on a real
// pty too): "n" and no answer change nothing (exit 6), "y" and "YES" apply;
// --yes skips the question; without a terminal --execute applies without
// reading stdin; --dry-run is the explicit default; --yes without --execute
// (except the old immediate form of pause, resume and snapshot rm, kept
// for one release) and --execute --dry-run are usage errors. A command
// that takes consumers changes two in one run, one plan line each. Every
// command of the model is a case here or is classed in unchanging; what
// was observed is the table in docs/reset.md (-update rewrites it).
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
	for _, name := range []string{"billing", "refunds", "archive", "spare", "lost", "lost2"} {
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

	at := func(delivered uint64, names ...string) bool { // each delivered up to that stream sequence
		for _, n := range names {
			if info(n).Delivered.Stream != delivered {
				return false
			}
		}
		return true
	}
	paused := func(names ...string) int {
		n := 0
		for _, name := range names {
			if info(name).Paused {
				n++
			}
		}
		return n
	}
	exist := func(names ...string) int {
		n := 0
		for _, name := range names {
			if _, err := js.Consumer(ctx, "ORDERS", name); err == nil {
				n++
			}
		}
		return n
	}
	copies := func() int {
		n := 0
		for _, name := range []string{"archive", "spare"} {
			if _, err := js.Consumer(ctx, "ORDERS_M", name); err == nil {
				n++
			}
		}
		return n
	}
	changes := 0 // recover's intents, each with its own id
	cases := []contractCase{{
		name:    "consumer reset",
		args:    []string{"consumer", "reset", "ORDERS", "archive", "--to-seq", "3"},
		prepare: func(t *testing.T) { must("consumer", "reset", "ORDERS", "archive", "--to-earliest", "--execute") },
		changed: func(t *testing.T) bool { return info("archive").Delivered.Stream == 2 },
		several: &severalCase{
			args:  []string{"consumer", "reset", "ORDERS", "archive", "spare", "--to-seq", "3"},
			names: []string{"archive", "spare"},
			prepare: func(t *testing.T) {
				must("consumer", "reset", "ORDERS", "archive", "spare", "--to-earliest", "--execute")
			},
			changed: func(t *testing.T) bool { return at(2, "archive", "spare") },
			intact:  func(t *testing.T) bool { return at(0, "archive", "spare") },
		},
	}, {
		name: "consumer snapshot restore",
		args: []string{"consumer", "snapshot", "restore", "at3", "archive"},
		prepare: func(t *testing.T) {
			must("consumer", "reset", "ORDERS", "archive", "--to-seq", "3", "--execute")
			run("", false, "consumer", "snapshot", "rm", "at3", "--execute")
			must("consumer", "snapshot", "save", "at3", "ORDERS", "archive")
			must("consumer", "reset", "ORDERS", "archive", "--to-earliest", "--execute")
		},
		changed: func(t *testing.T) bool { return info("archive").Delivered.Stream == 2 },
		several: &severalCase{
			args:  []string{"consumer", "snapshot", "restore", "both3", "archive", "spare"},
			names: []string{"archive", "spare"},
			prepare: func(t *testing.T) {
				must("consumer", "reset", "ORDERS", "archive", "spare", "--to-seq", "3", "--execute")
				run("", false, "consumer", "snapshot", "rm", "both3", "--execute")
				must("consumer", "snapshot", "save", "both3", "ORDERS", "archive", "spare")
				must("consumer", "reset", "ORDERS", "archive", "spare", "--to-earliest", "--execute")
			},
			changed: func(t *testing.T) bool { return at(2, "archive", "spare") },
			intact:  func(t *testing.T) bool { return at(0, "archive", "spare") },
		},
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
		several: &severalCase{
			args:  []string{"consumer", "copy", "ORDERS", "archive", "spare", "--to-stream", "ORDERS_M"},
			names: []string{"archive", "spare"},
			prepare: func(t *testing.T) {
				for _, name := range []string{"archive", "spare"} {
					if err := js.DeleteConsumer(ctx, "ORDERS_M", name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
						t.Fatal(err)
					}
				}
			},
			changed: func(t *testing.T) bool { return copies() == 2 },
			intact:  func(t *testing.T) bool { return copies() == 0 },
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
		several: &severalCase{
			args:  []string{"consumer", "recover", "ORDERS", "lost", "lost2"},
			names: []string{"lost", "lost2"},
			prepare: func(t *testing.T) {
				for _, name := range []string{"lost", "lost2"} {
					if _, err := js.Consumer(ctx, "ORDERS", name); err == nil {
						changes++
						id := fmt.Sprintf("c0ffee%02d", changes)
						if err := writeIntent(ctx, nc, js, intentSpec{stream: "ORDERS", consumer: name, seq: 4, method: reset.Recreate, id: id, deleteConsumer: true}); err != nil {
							t.Fatal(err)
						}
					}
				}
			},
			changed: func(t *testing.T) bool { return exist("lost", "lost2") == 2 },
			intact:  func(t *testing.T) bool { return exist("lost", "lost2") == 0 },
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
		name: "consumer pause", immediate: true,
		args:    []string{"consumer", "pause", "ORDERS", "archive", "--for", "1h"},
		prepare: func(t *testing.T) { must("consumer", "resume", "ORDERS", "archive", "--execute") },
		changed: func(t *testing.T) bool { return info("archive").Paused },
		several: &severalCase{
			args:    []string{"consumer", "pause", "ORDERS", "archive", "spare", "--for", "1h"},
			names:   []string{"archive", "spare"},
			prepare: func(t *testing.T) { must("consumer", "resume", "ORDERS", "archive", "spare", "--execute") },
			changed: func(t *testing.T) bool { return paused("archive", "spare") == 2 },
			intact:  func(t *testing.T) bool { return paused("archive", "spare") == 0 },
		},
	}, {
		name: "consumer resume", immediate: true,
		args:    []string{"consumer", "resume", "ORDERS", "archive"},
		prepare: func(t *testing.T) { must("consumer", "pause", "ORDERS", "archive", "--for", "1h", "--execute") },
		changed: func(t *testing.T) bool { return !info("archive").Paused },
		several: &severalCase{
			args:    []string{"consumer", "resume", "ORDERS", "archive", "spare"},
			names:   []string{"archive", "spare"},
			prepare: func(t *testing.T) { must("consumer", "pause", "ORDERS", "archive", "spare", "--execute") },
			changed: func(t *testing.T) bool { return paused("archive", "spare") == 0 },
			intact:  func(t *testing.T) bool { return paused("archive", "spare") == 2 },
		},
	}, {
		name: "consumer snapshot rm", immediate: true,
		args: []string{"consumer", "snapshot", "rm", "gone"},
		prepare: func(t *testing.T) {
			run("", false, "consumer", "snapshot", "rm", "gone", "--execute")
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
	with := func(args []string, extra ...string) []string {
		return append(append([]string{}, args...), extra...)
	}
	bin, err := exec.LookPath("jsctl") // the test binary, put in PATH by testscript.Main
	if err != nil {
		t.Fatalf("jsctl is not in PATH: %v", err)
	}
	home := t.TempDir()
	onPTY := func(args ...string) *exec.Cmd {
		cmd := exec.Command(bin, append([]string{"--server", s.ClientURL(), "--tz", "UTC"}, args...)...)
		cmd.Env = append(os.Environ(), "JSCTL_TZ=UTC", "NATS_CONTEXT=", "JSCTL_EMBEDDED=", "XDG_CONFIG_HOME="+home)
		return cmd
	}
	table := contractTable{}
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.name] = true
		row := map[string][]string{}
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
			ready := func(what string, wantChanged bool) {
				t.Helper()
				if !prepared {
					c.prepare(t)
				}
				prepared = !wantChanged
				if c.changed(t) {
					t.Fatalf("%s: the state is already changed before the try", what)
				}
			}
			try := func(col, what, stdin string, terminal bool, args []string, wantCode int, wantAsked, wantChanged bool) {
				t.Helper()
				ready(what, wantChanged)
				had := events(action)
				code, out, errOut := run(stdin, terminal, args...)
				asked := strings.Contains(errOut, "[y/N]")
				changed := c.changed(t)
				if code != wantCode || asked != wantAsked || changed != wantChanged {
					t.Fatalf("%s (%v): exit %d (want %d), asked %v (want %v), changed %v (want %v)\nstdout:\n%s\nstderr:\n%s",
						what, args, code, wantCode, asked, wantAsked, changed, wantChanged, out, errOut)
				}
				// A plan says that nothing changed and how to apply it.
				if (col == colPlan || col == colDryRun) && !strings.Contains(out, "Pass --execute to apply") {
					t.Fatalf("%s (%v): the plan does not say how to apply it:\n%s", what, args, out)
				}
				if col != "" {
					row[col] = append(row[col], outcome(what, code, asked, changed))
				}
				if got := events(action); (got > had) != wantChanged {
					t.Fatalf("%s (%v): %d %s audit events written, changed %v: a change writes its event, nothing else does\nstderr:\n%s", what, args, got-had, action, wantChanged, errOut)
				}
			}
			try(colPlan, "at a terminal", "y\n", true, c.args, 0, false, false)
			try(colPlan, "without one", "y\n", false, c.args, 0, false, false)
			try(colDryRun, "", "y\n", true, with(c.args, "--dry-run"), 0, false, false)
			try(colAsk, "n", "n\n", true, with(c.args, "--execute"), commands.ExitCancelled, true, false)
			try(colAsk, "no answer", "", true, with(c.args, "--execute"), commands.ExitCancelled, true, false)
			try(colAsk, "y", "y\n", true, with(c.args, "--execute"), 0, true, true)
			try(colAsk, "YES", "YES\n", true, with(c.args, "--execute"), 0, true, true)
			try(colYes, "--yes", "", true, with(c.args, "--execute", "--yes"), 0, false, true)
			try(colYes, "-y", "", true, with(c.args, "--execute", "-y"), 0, false, true)
			try(colNoTerm, "stdin holds n", "n\n", false, with(c.args, "--execute"), 0, false, true)
			if c.immediate {
				// The old immediate form, kept for one release.
				try(colYesAlone, "old immediate form", "", true, with(c.args, "--yes"), 0, false, true)
			} else {
				try(colYesAlone, "", "", true, with(c.args, "--yes"), commands.ExitUsage, false, false)
			}
			try("", "--require-reason without a reason", "", true, with(c.args, "--execute", "--yes", "--require-reason"), commands.ExitUsage, false, false)
			try("", "--require-reason with --reason", "", true, with(c.args, "--execute", "--yes", "--require-reason", "--reason", "contract"), 0, false, true)
			try("", "--audit required", "", true, with(c.args, "--execute", "--yes", "--audit", "required"), 0, false, true)
			try(colBoth, "", "", true, with(c.args, "--execute", "--dry-run"), commands.ExitUsage, false, false)

			// A real terminal: the plan, then the question; n changes nothing.
			ready("on a pty", false)
			p := startPTY(t, onPTY(with(c.args, "--execute")...))
			p.waitFor("[y/N] ")
			p.send("n\r")
			code := p.exit(time.Minute)
			if code != commands.ExitCancelled || c.changed(t) {
				t.Fatalf("on a pty, answered n: exit %d, changed %v; terminal:\n%s", code, c.changed(t), p.output())
			}
			row[colAsk] = append([]string{outcome("n on a pty", code, true, false)}, row[colAsk]...)

			if c.several == nil {
				row[colSeveral] = []string{"takes one"}
				return
			}
			m := c.several
			m.prepare(t)
			prepared = false // the single case's state is prepared again after
			for _, tr := range []struct {
				what     string
				stdin    string
				terminal bool
				extra    []string
				code     int
				changed  bool
			}{
				{"plan", "y\n", false, nil, 0, false},
				{"n at a terminal", "n\n", true, []string{"--execute"}, commands.ExitCancelled, false},
				{"--execute", "", false, []string{"--execute"}, 0, true},
			} {
				if !m.intact(t) {
					t.Fatalf("several, %s: the consumers are not as prepared", tr.what)
				}
				code, out, errOut := run(tr.stdin, tr.terminal, with(m.args, tr.extra...)...)
				if code != tr.code || m.changed(t) != tr.changed || (!tr.changed && !m.intact(t)) {
					t.Fatalf("several, %s (%v): exit %d (want %d), all changed %v (want %v)\nstdout:\n%s\nstderr:\n%s",
						tr.what, m.args, code, tr.code, m.changed(t), tr.changed, out, errOut)
				}
				if tr.what == "plan" {
					for _, n := range m.names {
						if !regexp.MustCompile(`(?m)^.*\b` + regexp.QuoteMeta(n) + `\b.*$`).MatchString(out) {
							t.Fatalf("several, plan: no line for %s:\n%s", n, out)
						}
					}
				}
				row[colSeveral] = append(row[colSeveral], outcome(tr.what, code, strings.Contains(errOut, "[y/N]"), m.changed(t)))
			}
		})
		table[c.name] = row
	}
	if t.Failed() {
		return
	}
	checkContractClasses(t, covered)
	table.check(t)
}
