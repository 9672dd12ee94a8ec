package commands_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The --batch result protocol (issue 16, items 1 and 2) against a real
// nats-server process: one server, a stream of 4 messages, a consumer per
// case, jsctl run as a process. Each handler logs the sequences it got (a
// side-effect file: runs per seq) and prints a result line per message.
// No failure may become done: every bad case ends processed 0, failed 4,
// each message run once, and its failed record keeps the reason.
func TestBatchResultProtocolRealServer(t *testing.T) {
	t.Parallel() // mostly waits (on processes, servers, timers): runs beside the others
	if testing.Short() {
		t.Skip("starts a nats-server process")
	}
	if _, err := exec.LookPath("jq"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("jq is not installed")
		}
		t.Skip("jq is not installed (.ci/run installs it)")
	}
	bin := raceJsctl(t) // consume's concurrent code, watched by the race detector
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
	ctx := testserver.Context(t, 3*time.Minute)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORD", Subjects: []string{"ord.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 4; i++ {
		if _, err := js.Publish(ctx, "ord.eu", fmt.Appendf(nil, `{"id":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	// The handler keeps its input, logs each seq, then prints RESULTS:
	// a jq program over the input, or a shell script.
	const logSeqs = `jq -c . > "$T/in.$$"; jq -r .seq "$T/in.$$" >> "$T/runs.$JSCTL_CONSUMER"; `
	for _, tc := range []struct {
		name    string
		results string
		// want is the summary's processed and failed; reason a substring
		// of every failed record's reason.
		processed, failed int
		reason            string
	}{
		{name: "good", results: `jq -c "{seq, ok: true}" "$T/in.$$"`, processed: 4},
		{
			name:    "long",
			results: `head -c 1200000 /dev/zero | tr "\0" x; echo; jq -c "{seq, ok: false}" "$T/in.$$"`,
			failed:  4, reason: "command reported: failed",
		},
		{
			name:    "structured",
			results: `jq -c "{seq, ok: false, error: {code: 23505}}" "$T/in.$$"`,
			failed:  4, reason: `command reported: {"code":23505}`,
		},
		{
			name:    "okstring",
			results: `jq -c "{seq, ok: \"false\"}" "$T/in.$$"`,
			failed:  4, reason: `"ok" must be true or false, got "false"`,
		},
		{
			name:    "okzero",
			results: `jq -c "{seq, ok: 0}" "$T/in.$$"`,
			failed:  4, reason: `"ok" must be true or false, got 0`,
		},
		{
			name:    "seqfloat",
			results: `jq -r "\"{\\\"seq\\\":\(.seq).0,\\\"ok\\\":false}\"" "$T/in.$$"`,
			failed:  4, reason: `"seq" must be a positive integer, got 1.0`,
		},
		{
			name:    "trailing",
			results: `jq -r "\"{\\\"seq\\\":\(.seq),\\\"ok\\\":false,\\\"error\\\":\\\"x\\\"} trailing\"" "$T/in.$$"`,
			failed:  4, reason: "text after the JSON object",
		},
		{
			name:    "twice",
			results: `jq -c "{seq, ok: false}, {seq, ok: true}" "$T/in.$$"`,
			failed:  4, reason: "reported again",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := js.CreateOrUpdateConsumer(ctx, "ORD", jetstream.ConsumerConfig{
				Durable: tc.name, AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second,
			}); err != nil {
				t.Fatal(err)
			}
			cmd := exec.CommandContext(ctx, bin, "consume", "ORD", tc.name, "--batch", "4", "--batch-wait", "2s", "--max", "4",
				"--json", "--exec", logSeqs+tc.results)
			cmd.Env = append(os.Environ(), "NATS_URL="+srv.URL(), "NATS_CONTEXT=", "JSCTL_EMBEDDED=", "T="+dir)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if code := cmd.ProcessState.ExitCode(); (tc.failed > 0) != (code == 1) || (tc.failed == 0 && err != nil) {
				t.Fatalf("exit status %d (%v); stderr: %s", code, err, outputTail(stderr.String()))
			}
			sum := batchSummary(t, stdout.Bytes())
			if sum.Processed != tc.processed || sum.Failed != tc.failed || sum.FailedDeliveries != tc.failed {
				t.Errorf("processed %d, failed %d (%d deliveries); want processed %d, failed %d", sum.Processed, sum.Failed, sum.FailedDeliveries, tc.processed, tc.failed)
			}
			if got := runsPerSeq(t, filepath.Join(dir, "runs."+tc.name)); got != "1:1 2:1 3:1 4:1" {
				t.Errorf("runs per seq: %s, want each of 1-4 once", got)
			}
			st, err := acks.OpenExisting(ctx, js, acks.DefaultBucket)
			if err != nil {
				t.Fatal(err)
			}
			recs, err := st.List(ctx, acks.Filter{Scope: acks.DefaultScope("ORD", tc.name)})
			if err != nil {
				t.Fatal(err)
			}
			states := map[acks.State]int{}
			for _, r := range recs {
				states[r.State]++
				if r.State == acks.StateFailed && !strings.Contains(r.Reason, tc.reason) {
					t.Errorf("message %d: failed record's reason %q does not contain %q", r.Seq, r.Reason, tc.reason)
				}
			}
			if states[acks.StateDone] != tc.processed || states[acks.StateFailed] != tc.failed || len(recs) != 4 {
				t.Errorf("records: %v (%d), want %d done, %d failed", states, len(recs), tc.processed, tc.failed)
			}
		})
	}
}

// batchSummary reads the summary line of consume --json.
func batchSummary(t *testing.T, out []byte) acks.Summary {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l struct {
			Summary *acks.Summary `json:"summary"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Summary != nil {
			return *l.Summary
		}
	}
	t.Fatalf("no summary line in: %s", outputTail(string(out)))
	return acks.Summary{}
}

// runsPerSeq reads a handler's log of sequences: "SEQ:RUNS ..." in order.
func runsPerSeq(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, f := range strings.Fields(string(b)) {
		n[f]++
	}
	var out []string
	for s, c := range n {
		out = append(out, fmt.Sprintf("%s:%d", s, c))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// outputTail is the end of a long output, for a failure message.
func outputTail(s string) string {
	if len(s) > 2000 {
		return "…" + s[len(s)-2000:]
	}
	return s
}
