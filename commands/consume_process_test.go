package commands_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go/jetstream"
)

// consumeEnv is a server with stream ORDERS holding n messages, a consumer
// "c" with a short ack wait, and a handler log.
type consumeEnv struct {
	t   *testing.T
	url string
	js  jetstream.JetStream
	bin string
	log string
	n   int
	// runs counts the jsctl processes started; each gets its number as
	// RUN_ID, which its handlers log.
	runs int
}

func newConsumeEnv(t *testing.T, n int, ackWait time.Duration) *consumeEnv {
	t.Helper()
	bin := raceJsctl(t) // consume's concurrent code, watched by the race detector
	s := testserver.Start(t)
	nc := testserver.Connect(t, s)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if _, err := js.Publish(ctx, "orders.eu", fmt.Appendf(nil, "order %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := js.CreateOrUpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{
		Durable: "c", AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, MaxAckPending: 1000,
	}); err != nil {
		t.Fatal(err)
	}
	return &consumeEnv{t: t, url: s.ClientURL(), js: js, bin: bin, log: filepath.Join(t.TempDir(), "handled.log"), n: n}
}

// handlerCmd logs "start SEQ RUN", works for a while (SEQ mod 4 tenths of
// $WORK_UNIT seconds), then logs "end SEQ RUN"; RUN is the number of the
// jsctl process that ran it (inherited through the environment: $PPID would
// read 1 in a handler whose jsctl was killed just as it started). Appends
// are atomic (O_APPEND, one short line).
const handlerCmd = `echo "start $JSCTL_SEQ $RUN_ID" >> "$HANDLER_LOG"; sleep "$WORK_UNIT$(( JSCTL_SEQ % 4 ))"; echo "end $JSCTL_SEQ $RUN_ID" >> "$HANDLER_LOG"`

// start runs `jsctl consume ORDERS c` in the background; unit is "0." for
// handlers up to 0.3s, "0.0" for up to 30ms.
func (e *consumeEnv) start(unit string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	e.t.Helper()
	cmd := exec.Command(e.bin, append([]string{"consume", "ORDERS", "c", "--exec", handlerCmd, "--json"}, args...)...)
	e.runs++
	cmd.Env = append(os.Environ(), "NATS_URL="+e.url, "HANDLER_LOG="+e.log, "WORK_UNIT="+unit, "NATS_CONTEXT=", "JSCTL_EMBEDDED=",
		"RUN_ID="+strconv.Itoa(e.runs))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	testserver.KillAtEnd(e.t, cmd)
	return cmd, &out
}

// logLines reads the handler log.
func (e *consumeEnv) logLines() []string {
	b, err := os.ReadFile(e.log)
	if err != nil && !os.IsNotExist(err) {
		e.t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

func (e *consumeEnv) count(prefix string) int {
	n := 0
	for _, l := range e.logLines() {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// done lists the sequences whose records are done.
func (e *consumeEnv) done() map[uint64]bool {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := acks.OpenExisting(ctx, e.js, acks.DefaultBucket)
	if err != nil {
		return map[uint64]bool{}
	}
	recs, err := st.List(ctx, acks.Filter{Scope: "ORDERS.c", State: acks.StateDone})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[uint64]bool{}
	for _, r := range recs {
		out[r.Seq] = true
	}
	return out
}

func (e *consumeEnv) claims() int {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := acks.OpenExisting(ctx, e.js, acks.DefaultBucket)
	if err != nil {
		e.t.Fatal(err)
	}
	recs, err := st.List(ctx, acks.Filter{State: acks.StateClaim})
	if err != nil {
		e.t.Fatal(err)
	}
	return len(recs)
}

// run is one "start" or "end" line of the handler log: its line number and
// the number of the jsctl process (RUN_ID).
type run struct{ line, pid int }

// parseRuns parses the handler log into the start and end lines of each
// sequence.
func parseRuns(lines []string) (starts, ends map[uint64][]run) {
	starts, ends = map[uint64][]run{}, map[uint64][]run{}
	for i, l := range lines {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		seq, err1 := strconv.ParseUint(f[1], 10, 64)
		pid, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil {
			continue
		}
		switch f[0] {
		case "start":
			starts[seq] = append(starts[seq], run{i, pid})
		case "end":
			ends[seq] = append(ends[seq], run{i, pid})
		}
	}
	return starts, ends
}

// Two separate jsctl consume processes with 4 workers each on one consumer
// whose ack wait is shorter than many handlers: every message runs exactly
// once; SIGTERM then stops both cleanly with no claim left behind.
func TestConsumeTwoProcessesExactlyOnce(t *testing.T) {
	t.Parallel() // mostly waits (on processes, servers, timers): runs beside the others
	e := newConsumeEnv(t, 120, 100*time.Millisecond)
	a, outA := e.start("0.", "--workers", "4", "--lease", "2s")
	b, outB := e.start("0.", "--workers", "4", "--lease", "2s")
	testserver.WaitFor(t, 3*time.Minute, "every message done", func() bool { return len(e.done()) == e.n })
	for _, p := range []*exec.Cmd{a, b} {
		if err := p.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range []*exec.Cmd{a, b} {
		if err := p.Wait(); err != nil {
			t.Errorf("process %d: %v\n%s", i+1, err, []*bytes.Buffer{outA, outB}[i])
		}
	}
	starts, _ := parseRuns(e.logLines())
	for seq := uint64(1); seq <= uint64(e.n); seq++ {
		if len(starts[seq]) != 1 {
			t.Errorf("message %d ran %d times", seq, len(starts[seq]))
		}
	}
	if n := e.claims(); n != 0 {
		t.Errorf("%d claims left behind", n)
	}
	busy := strings.Count(outA.String(), `"action":"busy"`) + strings.Count(outB.String(), `"action":"busy"`)
	t.Logf("busy back-offs: %d", busy)
	if busy == 0 {
		t.Error("no busy back-off: the ack wait did not force concurrent redeliveries")
	}
	for _, o := range []*bytes.Buffer{outA, outB} {
		if !strings.Contains(o.String(), `{"summary":{`) {
			t.Errorf("no summary line:\n%s", o)
		}
	}
}

// jsctl consume is killed (SIGKILL) repeatedly while it works and started
// again. Every message is handled; a message handled twice must have been
// in flight at a kill (its previous run belonged to the killed process and
// the message was not done when it died), never done before.
func TestConsumeSurvivesSIGKILL(t *testing.T) {
	t.Parallel() // mostly waits (on processes, servers, timers): runs beside the others
	const kills = 4
	e := newConsumeEnv(t, 100, time.Second)
	doneAtKill := make([]map[uint64]bool, 0, kills)
	killed := map[int]int{} // RUN_ID -> kill index
	for k := 0; k < kills; k++ {
		cmd, _ := e.start("0.0", "--workers", "4", "--lease", "2s")
		target := (k + 1) * e.n / (kills + 1)
		testserver.WaitFor(t, 3*time.Minute, fmt.Sprintf("%d messages ended before kill %d", target, k+1), func() bool { return e.count("end ") >= target })
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		killed[e.runs] = k
		doneAtKill = append(doneAtKill, e.done()) // what was done when it died
	}
	// Final runs until everything is done (in-flight claims of the killed
	// processes expire by their lease first).
	testserver.WaitFor(t, 90*time.Second, "every message done", func() bool {
		if len(e.done()) == e.n {
			return true
		}
		cmd, out := e.start("0.0", "--workers", "4", "--lease", "2s", "--idle", "3s")
		if err := cmd.Wait(); err != nil {
			t.Logf("final run: %v\n%s", err, out)
		}
		return len(e.done()) == e.n
	})
	starts, ends := parseRuns(e.logLines())
	var twice []string
	for seq := uint64(1); seq <= uint64(e.n); seq++ {
		if len(ends[seq]) == 0 {
			t.Errorf("message %d never handled to the end", seq)
		}
		for i := 1; i < len(starts[seq]); i++ {
			prev := starts[seq][i-1]
			k, ok := killed[prev.pid]
			switch {
			case !ok:
				t.Errorf("message %d ran again (log line %d) though the process of its previous run (%d) was not killed", seq, starts[seq][i].line+1, prev.pid)
			case doneAtKill[k][seq]:
				t.Errorf("message %d was done at kill %d and ran again", seq, k+1)
			default:
				twice = append(twice, fmt.Sprintf("%d (in flight at kill %d)", seq, k+1))
			}
		}
	}
	sort.Strings(twice)
	t.Logf("%d kills; messages handled twice, each in flight at a kill: %v", kills, twice)
	if n := e.claims(); n != 0 {
		t.Errorf("%d claims left behind", n)
	}
}

// SIGINT while handlers run: they finish, their messages are done, the
// process exits 0 and leaves no claim behind.
func TestConsumeSIGINTFinishesInFlight(t *testing.T) {
	t.Parallel() // mostly waits (on processes, servers, timers): runs beside the others
	e := newConsumeEnv(t, 20, 30*time.Second)
	cmd, out := e.start("0.", "--workers", "4", "--lease", "2s")
	testserver.WaitFor(t, 30*time.Second, "handlers running", func() bool { return e.count("start ") >= 6 })
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, out)
	}
	starts, ends := parseRuns(e.logLines())
	done := e.done()
	for seq, s := range starts {
		if len(s) != 1 || len(ends[seq]) != 1 || !done[seq] {
			t.Errorf("message %d: %d starts, %d ends, done %v", seq, len(s), len(ends[seq]), done[seq])
		}
	}
	if len(done) != len(starts) {
		t.Errorf("%d messages done, %d started", len(done), len(starts))
	}
	if n := e.claims(); n != 0 {
		t.Errorf("%d claims left behind", n)
	}
	if !strings.Contains(out.String(), fmt.Sprintf(`"processed":%d,`, len(starts))) {
		t.Errorf("summary does not count %d processed:\n%s", len(starts), out)
	}
}

// The exit rule: a signal is a normal way to stop consume. SIGTERM after
// some messages failed exits 1 (they will be redelivered), not 6; SIGTERM
// with no failure exits 0.
func TestConsumeSIGTERMExitRule(t *testing.T) {
	t.Parallel() // mostly waits (on processes, servers, timers): runs beside the others
	e := newConsumeEnv(t, 20, 30*time.Second)
	for _, tc := range []struct {
		exec string
		want int
	}{
		{`echo "start $JSCTL_SEQ" >> "$HANDLER_LOG"; exit 3`, 1},
		{`echo "start $JSCTL_SEQ" >> "$HANDLER_LOG"; sleep 0.1`, 0},
	} {
		before := e.count("start ")
		cmd := exec.Command(e.bin, "consume", "ORDERS", "c", "--exec", tc.exec, "--retry-delay", "10s")
		cmd.Env = append(os.Environ(), "NATS_URL="+e.url, "HANDLER_LOG="+e.log, "NATS_CONTEXT=", "JSCTL_EMBEDDED=")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		testserver.KillAtEnd(t, cmd)
		testserver.WaitFor(t, 30*time.Second, "handlers ran", func() bool { return e.count("start ") >= before+3 })
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		if code != tc.want {
			t.Errorf("%q stopped by SIGTERM exited %d, want %d:\n%s", tc.exec, code, tc.want, out.String())
		}
	}
}
