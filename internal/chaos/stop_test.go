package chaos

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// stopHandler logs "start SEQ RUN", works longer than the lease, then
// ignores SIGTERM and logs "end SEQ RUN" as its last act: a command that is
// stopped before it commits leaves a start without an end, and one that
// logged its end exits 0.
const stopHandler = `echo "start $JSCTL_SEQ $RUN_ID" >> "$HANDLER_LOG"; sleep 2.5; trap "" TERM; echo "end $JSCTL_SEQ $RUN_ID" >> "$HANDLER_LOG"`

// TestConsumeStopsAreReleases sends 20 SIGTERMs to `jsctl consume`
// processes (two at a time, 2 workers each, on one consumer of a real
// nats-server process) at random moments while their commands run, each
// longer than the lease (2.5s, lease 2s), with a random --stop-timeout
// from 0 to 1s, --max-failures 1 and --dead-letter: any stop counted as a
// failure would end its message in a dead letter at once. Then a clean
// run. Every message must have run to its end exactly once, in its last
// run (every earlier run of it interrupted), with no failed record, no
// dead letter, no claim left and no failed delivery in any run.
//
// JSCTL_CHAOS_SEED=N repeats a run's random choices.
func TestConsumeStopsAreReleases(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	if testing.Short() {
		t.Skip("chaos suite: runs real processes")
	}
	const n, signals, lanes = 40, 20, 2
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("JSCTL_CHAOS_SEED"), 10, 64); err == nil {
		seed = s
	}
	rng := rand.New(rand.NewPCG(seed, 16))
	t.Logf("seed %d (JSCTL_CHAOS_SEED=%d repeats it)", seed, seed)

	srv := natsproc.Start(t, natsproc.Options{})
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testserver.Context(t, 5*time.Minute)
	for _, cfg := range []jetstream.StreamConfig{
		{Name: "ORDERS", Subjects: []string{"orders.>"}},
		{Name: "DEAD", Subjects: []string{"dead.>"}},
	} {
		if _, err := js.CreateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= n; i++ {
		if _, err := js.Publish(ctx, "orders.eu", fmt.Appendf(nil, "order %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{
		Durable: "c", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second,
	}); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "handled.log")
	home := t.TempDir()
	var mu sync.Mutex
	runID := 0
	start := func(args ...string) (*exec.Cmd, *testserver.SyncBuffer, int) {
		mu.Lock()
		runID++
		id := runID
		mu.Unlock()
		cmd := jsctlCommand(srv.URL(), home, append([]string{"consume", "ORDERS", "c", "--exec", stopHandler, "--json",
			"--lease", "2s", "--max-failures", "1", "--dead-letter", "dead.orders"}, args...)...)
		cmd.Env = append(cmd.Env, "HANDLER_LOG="+log, "RUN_ID="+strconv.Itoa(id))
		out := &testserver.SyncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, out, id
	}
	type outcome struct {
		run                           int
		code                          int
		processed, released, failures int
		out                           string
	}
	var outcomes []outcome
	collect := func(cmd *exec.Cmd, out *testserver.SyncBuffer, id int) outcome {
		_ = cmd.Wait()
		o := outcome{run: id, code: cmd.ProcessState.ExitCode(), out: out.String()}
		for _, line := range strings.Split(o.out, "\n") {
			var l struct {
				Action  string `json:"action"`
				Summary *acks.Summary
			}
			if json.Unmarshal([]byte(line), &l) != nil {
				continue
			}
			if l.Action == "failed" {
				o.failures++
			}
			if l.Summary != nil {
				o.processed, o.released = l.Summary.Processed, l.Summary.Released
			}
		}
		return o
	}
	var summaryMu sync.Mutex
	// Each lane: start a run, wait until one of its commands has
	// started, wait a random moment within the command's 2.5s, SIGTERM.
	// The random choices are drawn before the lanes start, so a seed
	// repeats them.
	type plan struct {
		delay, stopTimeout time.Duration
	}
	plans := make([][]plan, lanes)
	for i := range signals {
		plans[i%lanes] = append(plans[i%lanes], plan{
			delay:       time.Duration(rng.IntN(2500)) * time.Millisecond,
			stopTimeout: time.Duration(rng.IntN(11)) * 100 * time.Millisecond,
		})
	}
	began := time.Now()
	var wg sync.WaitGroup
	for lane := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, p := range plans[lane] {
				cmd, out, id := start("--workers", "2", "--stop-timeout", p.stopTimeout.String())
				mark := fmt.Sprintf(" %d", id)
				deadline := time.Now().Add(time.Minute)
				for !startedBy(log, mark) {
					if time.Now().After(deadline) {
						_ = cmd.Process.Kill()
						_ = cmd.Wait()
						t.Errorf("run %d started no command within a minute:\n%s", id, out)
						return
					}
					time.Sleep(20 * time.Millisecond) // polling the handler log
				}
				time.Sleep(p.delay) // the fault: a SIGTERM at a random moment of the command
				_ = cmd.Process.Signal(syscall.SIGTERM)
				o := collect(cmd, out, id)
				summaryMu.Lock()
				outcomes = append(outcomes, o)
				summaryMu.Unlock()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	interrupting := time.Since(began)
	// The clean run.
	cmd, out, id := start("--workers", "8", "--idle", "3s")
	clean := collect(cmd, out, id)

	starts, ends := handlerRuns(t, log)
	var released, processedInTries, interrupted, exitNonZero int
	for _, o := range outcomes {
		released += o.released
		processedInTries += o.processed
		if o.code != 0 {
			exitNonZero++
			t.Errorf("run %d stopped by SIGTERM exited %d:\n%s", o.run, o.code, tail(o.out, 3000))
		}
		if o.failures != 0 {
			t.Errorf("run %d: %d failed deliveries:\n%s", o.run, o.failures, tail(o.out, 3000))
		}
	}
	if clean.code != 0 || clean.failures != 0 {
		t.Errorf("clean run exited %d with %d failed deliveries:\n%s", clean.code, clean.failures, tail(clean.out, 3000))
	}
	hist := map[int]int{} // runs of a message -> messages
	for seq := 1; seq <= n; seq++ {
		s, e := starts[seq], ends[seq]
		hist[len(s)]++
		interrupted += len(s) - len(e)
		switch {
		case len(e) != 1:
			t.Errorf("message %d ran to its end %d times (runs %v started it, %v ended it), want once", seq, len(e), s, e)
		case s[len(s)-1] != e[0]:
			t.Errorf("message %d ended in run %d, not in its last run (runs %v started it)", seq, e[0], s)
		}
	}
	st, err := acks.OpenExisting(ctx, js, acks.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	failed, err := st.List(ctx, acks.Filter{State: acks.StateFailed})
	if err != nil {
		t.Fatal(err)
	}
	claims, err := st.List(ctx, acks.Filter{State: acks.StateClaim})
	if err != nil {
		t.Fatal(err)
	}
	done, err := st.List(ctx, acks.Filter{State: acks.StateDone})
	if err != nil {
		t.Fatal(err)
	}
	deadInfo, err := js.Stream(ctx, "DEAD")
	if err != nil {
		t.Fatal(err)
	}
	dead := deadInfo.CachedInfo().State.Msgs
	if len(failed) != 0 || len(claims) != 0 || dead != 0 || len(done) != n {
		t.Errorf("%d failed records, %d claims, %d dead letters, %d done records; want 0, 0, 0 and %d", len(failed), len(claims), dead, len(done), n)
	}
	var runs []string
	var keys []int
	for k := range hist {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	for _, k := range keys {
		runs = append(runs, fmt.Sprintf("%d×%d", hist[k], k))
	}
	t.Logf("%d messages, %d SIGTERMs (%d at a time, 2 workers each, lease 2s, commands 2.5s, --stop-timeout 0-1s) in %v: "+
		"%d commands interrupted, %d released, %d processed during the tries; clean run: processed %d, released %d; "+
		"runs per message (messages×runs): %s; failed records %d, dead letters %d, claims left %d, runs exiting non-zero %d",
		n, signals, lanes, interrupting.Round(time.Second), interrupted, released, processedInTries, clean.processed, clean.released,
		strings.Join(runs, " "), len(failed), dead, len(claims), exitNonZero)
}

// startedBy reports whether the handler log has a start line ending in mark
// (" RUN").
func startedBy(log, mark string) bool {
	b, err := os.ReadFile(log)
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "start ") && strings.HasSuffix(l, mark) {
			return true
		}
	}
	return false
}
