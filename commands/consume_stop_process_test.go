package commands_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// handlerServer is a server for the handler-boundary tests: the embedded
// one, or a real nats-server process (internal/natsproc).
type handlerServer struct {
	t   *testing.T
	url string
	js  jetstream.JetStream
	bin string
}

// handlerServers starts both kinds of server.
func handlerServers(t *testing.T) map[string]*handlerServer {
	t.Helper()
	bin := raceJsctl(t) // consume's concurrent code, watched by the race detector
	out := map[string]*handlerServer{}
	emb := testserver.Start(t)
	out["embedded"] = &handlerServer{t: t, url: emb.ClientURL(), bin: bin}
	if !testing.Short() {
		out["nats-server"] = &handlerServer{t: t, url: natsproc.Start(t, natsproc.Options{}).URL(), bin: bin}
	}
	for _, s := range out {
		nc, err := nats.Connect(s.url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		if s.js, err = jetstream.New(nc); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// stream creates a stream of n messages on subj.> and a pull consumer of
// it with explicit acks.
func (s *handlerServer) stream(name, consumer string, n int) {
	s.t.Helper()
	ctx := testserver.Context(s.t, 30*time.Second)
	if _, err := s.js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{strings.ToLower(name) + ".>"}}); err != nil {
		s.t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if _, err := s.js.Publish(ctx, strings.ToLower(name)+".x", fmt.Appendf(nil, "message %d", i)); err != nil {
			s.t.Fatal(err)
		}
	}
	if _, err := s.js.CreateOrUpdateConsumer(ctx, name, jetstream.ConsumerConfig{
		Durable: consumer, AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second,
	}); err != nil {
		s.t.Fatal(err)
	}
}

// jsctl prepares `jsctl ARGS` against the server.
func (s *handlerServer) jsctl(side string, args ...string) (*exec.Cmd, *testserver.SyncBuffer, *testserver.SyncBuffer) {
	cmd := exec.Command(s.bin, args...)
	cmd.Env = append(os.Environ(), "NATS_URL="+s.url, "SIDE="+side, "NATS_CONTEXT=", "JSCTL_EMBEDDED=")
	var out, errb testserver.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	testserver.KillAtEnd(s.t, cmd)
	return cmd, &out, &errb
}

// exitCode waits for cmd and returns its exit code.
func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	err := cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode()
}

// consumeSummary is consume's --json summary and its lines' actions.
type consumeOutcome struct {
	acks.Summary
	actions map[string]int
}

func parseConsume(t *testing.T, out string) consumeOutcome {
	t.Helper()
	o := consumeOutcome{actions: map[string]int{}}
	found := false
	for _, line := range strings.Split(out, "\n") {
		var l struct {
			Action  string `json:"action"`
			Summary *struct {
				acks.Summary
			} `json:"summary"`
		}
		if json.Unmarshal([]byte(line), &l) != nil {
			continue
		}
		if l.Summary != nil {
			o.Summary, found = l.Summary.Summary, true
			continue
		}
		o.actions[l.Action]++
	}
	if !found {
		t.Fatalf("no summary line in:\n%s", out)
	}
	return o
}

// sideRuns counts the lines of the side file per sequence.
func sideRuns(t *testing.T, side string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(side)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	runs := map[string]int{}
	for _, f := range strings.Fields(string(b)) {
		runs[f]++
	}
	return runs
}

// Issue 16, item 3: a command that exits 0 but leaves a background child
// holding its output is judged by its exit: each message runs exactly once
// and is processed, and one warning names the messages (the child is sent
// SIGTERM). Per message and per batch, against both kinds of server.
func TestConsumeBackgroundChildRunsOnce(t *testing.T) {
	t.Parallel() // mostly waits (on processes, servers, timers): runs beside the others
	const n = 3
	for kind, s := range handlerServers(t) {
		for _, mode := range []struct {
			name string
			args []string
			cmd  string
		}{
			{"per message", nil, `echo "$JSCTL_SEQ" >> "$SIDE"; sleep 20 & echo $! >> "$SIDE.pids"`},
			{"batch", []string{"--batch", "10", "--batch-wait", "1s"},
				`sed -E 's/.*"seq":([0-9]+).*/\1/' >> "$SIDE"; sleep 20 & echo $! >> "$SIDE.pids"`},
		} {
			t.Run(kind+"/"+mode.name, func(t *testing.T) {
				stream := "BG" + strings.ToUpper(strings.ReplaceAll(mode.name, " ", ""))
				s.stream(stream, "c", n)
				side := filepath.Join(t.TempDir(), "side")
				cmd, out, errb := s.jsctl(side, append([]string{"consume", stream, "c", "--exec", mode.cmd, "--idle", "2s", "--json"}, mode.args...)...)
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				if code := exitCode(t, cmd); code != 0 {
					t.Fatalf("consume exited %d:\n%s\n%s", code, out, errb)
				}
				o := parseConsume(t, out.String())
				if o.Processed != n || o.FailedDeliveries != 0 || o.Failed != 0 || o.Released != 0 {
					t.Errorf("processed %d, failed %d (%d deliveries), released %d; want processed %d and nothing else:\n%s\n%s",
						o.Processed, o.Failed, o.FailedDeliveries, o.Released, n, out, errb)
				}
				want := "for messages 1, 2, 3 exited but left a process holding its output"
				var got []string
				for _, w := range o.Warnings {
					if strings.Contains(w, "left a process holding its output") {
						got = append(got, w)
					}
				}
				if len(got) != 1 || !strings.Contains(got[0], want) {
					t.Errorf("warnings %q: want one saying %q", o.Warnings, want)
				}
				runs := sideRuns(t, side)
				for i := 1; i <= n; i++ {
					if r := runs[fmt.Sprint(i)]; r != 1 {
						t.Errorf("message %d ran %d times, want 1 (side file: %v)", i, r, runs)
					}
				}
				// The children holding the output were sent SIGTERM.
				pids := sideRuns(t, side+".pids")
				if len(pids) == 0 {
					t.Fatal("no background child recorded its pid")
				}
				testserver.WaitFor(t, 30*time.Second, "the background children gone", func() bool {
					for pid := range pids {
						if alive(pid) {
							return false
						}
					}
					return true
				})
			})
		}
	}
}

// Issue 16, item 4, the reported case: `consume KB h2 --exec 'sleep 1000'
// --lease 3s --max-failures 1 --dead-letter dead.h2` stopped by SIGTERM
// while the command runs. The command is stopped after --stop-timeout and
// its message released: released 1, failed 0, no failed record, no dead
// letter, exit 0; the next run processes it at once, exactly once.
func TestConsumeStopReleases(t *testing.T) {
	t.Parallel() // mostly waits (on processes, servers, timers): runs beside the others
	for kind, s := range handlerServers(t) {
		t.Run(kind, func(t *testing.T) {
			s.stream("KB", "h2", 1)
			ctx := testserver.Context(t, 30*time.Second)
			dead, err := s.js.CreateStream(ctx, jetstream.StreamConfig{Name: "DEAD", Subjects: []string{"dead.>"}})
			if err != nil {
				t.Fatal(err)
			}
			side := filepath.Join(t.TempDir(), "side")
			cmd, out, errb := s.jsctl(side, "consume", "KB", "h2", "--exec", `echo "$JSCTL_SEQ" >> "$SIDE"; sleep 1000`,
				"--lease", "3s", "--max-failures", "1", "--dead-letter", "dead.h2", "--stop-timeout", "1s", "--json")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			testserver.WaitFor(t, 30*time.Second, "the command started", func() bool { return sideRuns(t, side)["1"] == 1 })
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code := exitCode(t, cmd); code != 0 {
				t.Errorf("consume stopped by SIGTERM exited %d, want 0:\n%s\n%s", code, out, errb)
			}
			o := parseConsume(t, out.String())
			if o.Released != 1 || o.Failed != 0 || o.FailedDeliveries != 0 || o.Terminated != 0 || o.DeadLettered != 0 || o.actions["released"] != 1 {
				t.Errorf("released %d (lines %d), failed %d (%d deliveries), terminated %d, dead-lettered %d; want released 1 and nothing else:\n%s\n%s",
					o.Released, o.actions["released"], o.Failed, o.FailedDeliveries, o.Terminated, o.DeadLettered, out, errb)
			}
			st, err := acks.OpenExisting(ctx, s.js, acks.DefaultBucket)
			if err != nil {
				t.Fatal(err)
			}
			recs, err := st.List(ctx, acks.Filter{Scope: "KB.h2"})
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 0 {
				t.Errorf("records after the stop: %+v, want none (the claim given back)", recs)
			}
			if n := streamMsgs(t, dead); n != 0 {
				t.Errorf("%d dead letters, want 0", n)
			}

			// The next run processes it at once (no busy back-off), once.
			cmd, out, errb = s.jsctl(side, "consume", "KB", "h2", "--exec", `echo "$JSCTL_SEQ" >> "$SIDE"`, "--lease", "3s",
				"--max-failures", "1", "--dead-letter", "dead.h2", "--idle", "2s", "--json")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if code := exitCode(t, cmd); code != 0 {
				t.Fatalf("the next run exited %d:\n%s\n%s", code, out, errb)
			}
			o = parseConsume(t, out.String())
			if o.Processed != 1 || o.Busy != 0 || o.FailedDeliveries != 0 || o.Released != 0 {
				t.Errorf("next run: processed %d, busy %d, failed deliveries %d, released %d; want processed 1 only:\n%s\n%s",
					o.Processed, o.Busy, o.FailedDeliveries, o.Released, out, errb)
			}
			if r := sideRuns(t, side)["1"]; r != 2 {
				t.Errorf("message 1 ran %d times, want 2 (the stopped run and the next)", r)
			}
			if n := streamMsgs(t, dead); n != 0 {
				t.Errorf("%d dead letters after the next run, want 0", n)
			}
		})
	}
}

// streamMsgs counts a stream's messages.
func streamMsgs(t *testing.T, st jetstream.Stream) uint64 {
	t.Helper()
	info, err := st.Info(testserver.Context(t, 30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// acks retry shares the handler: SIGTERM while the command runs stops it
// after --stop-timeout and releases the message, its failed record written
// back as it was (final, 1 failure, the first reason); exit 6.
func TestAcksRetryStopKeepsFailedRecord(t *testing.T) {
	t.Parallel() // mostly waits (on processes, servers, timers): runs beside the others
	bin, err := exec.LookPath("jsctl")
	if err != nil {
		t.Fatalf("jsctl is not in PATH: %v", err)
	}
	srv := testserver.Start(t)
	s := &handlerServer{t: t, url: srv.ClientURL(), bin: bin}
	if s.js, err = jetstream.New(testserver.Connect(t, srv)); err != nil {
		t.Fatal(err)
	}
	s.stream("RT", "c", 1)
	side := filepath.Join(t.TempDir(), "side")
	cmd, out, errb := s.jsctl(side, "consume", "RT", "c", "--exec", "exit 3", "--max-failures", "1", "--idle", "1s")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, cmd); code != 1 {
		t.Fatalf("consume exited %d, want 1:\n%s\n%s", code, out, errb)
	}
	cmd, out, errb = s.jsctl(side, "acks", "retry", "--scope", "RT.c", "--all-failed", "--execute", "--json", "--stop-timeout", "1s",
		"--exec", `echo "$JSCTL_SEQ" >> "$SIDE"; sleep 30`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testserver.WaitFor(t, 30*time.Second, "the command started", func() bool { return sideRuns(t, side)["1"] == 1 })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, cmd); code != 6 {
		t.Errorf("acks retry stopped by SIGTERM exited %d, want 6:\n%s\n%s", code, out, errb)
	}
	var got struct {
		Summary struct{ Processed, Failed, Skipped, Released int }
	}
	if err := json.Unmarshal([]byte(out.String()), &got); err != nil || got.Summary.Released != 1 || got.Summary.Failed != 0 || got.Summary.Processed != 0 {
		t.Errorf("summary %+v (%v), want released 1 only:\n%s\n%s", got.Summary, err, out, errb)
	}
	ctx := testserver.Context(t, 30*time.Second)
	st, err := acks.OpenExisting(ctx, s.js, acks.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.Get(ctx, "RT.c", acks.KeyFromSequence, "1")
	if err != nil || r.State != acks.StateFailed || !r.Final || r.Failures != 1 || r.Reason != "command exited with status 3" {
		t.Errorf("record after the stop: %+v %v, want the failed record as it was", r, err)
	}
}

// alive reports whether process pid runs (a zombie, dead but not yet
// reaped, does not).
func alive(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	_, rest, ok := strings.Cut(string(b), ") ")
	return ok && !strings.HasPrefix(rest, "Z")
}
