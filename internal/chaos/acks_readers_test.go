package chaos

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go/jetstream"
)

// The matrix of issue 26 for the ack bucket: every command that reads
// JSCTL_ACKS (derived from docs/permissions.md: its bucket table and every
// command whose permissions name KV_JSCTL_ACKS; a command missing from
// ackReaders fails TestAckReadersMatrixCoversEveryReader) × every fault of
// a record read back, against a real nats-server process. Each cell runs
// the command as users run it and asserts one outcome: the fault is
// reported (its output names it), the command refuses (exit 5), or the
// command does not read that record ("unaffected"); never exit 2 (one bad
// record blocking the scope), never a hang. After each fault's row, a plain
// client checks that nothing was acted on wrongly: no publish to the
// server's API or a dead-letter subject, the victim stream still there, the
// current stream's messages run.

type ackReader struct {
	name string
	args []string
}

// ackReaders are the commands that read the ack bucket, in the order the
// matrix runs them (those that may change records come last).
var ackReaders = []ackReader{
	{"acks ls", []string{"acks", "ls", "--scope", "W.c"}},
	{"acks get", []string{"acks", "get", "W.c", "--seq", "2"}},
	{"acks stats", []string{"acks", "stats", "--scope", "W.c"}},
	{"acks forget", []string{"acks", "forget", "--scope", "W.c", "--from-seq", "1", "--to-seq", "3"}},
	{"acks compact", []string{"acks", "compact", "--scope", "W.c"}},
	{"consumer check", []string{"consumer", "check", "W", "c", "--failed-records-warn", "0"}},
	{"consumer snapshot save", []string{"consumer", "snapshot", "save", "m", "W", "c"}},
	{"consumer snapshot restore", []string{"consumer", "snapshot", "restore", "m", "--forget-acks"}},
	{"consumer copy", []string{"consumer", "copy", "W", "c", "--to-stream", "WM"}},
	{"consume", nil}, // args per env: its handler logs to a file
	// After consume: its consumer has delivered the messages, so the
	// replayed range holds their records.
	{"consumer reset", []string{"consumer", "reset", "W", "c", "--to-seq", "1", "--forget-acks"}},
	{"acks retry", []string{"acks", "retry", "--scope", "W.c", "--all-failed", "--exec", "true", "--execute"}},
}

type ackFault struct {
	name   string
	marker *regexp.Regexp // what a report of it says
	apply  func(t *testing.T, e *env)
}

func kvPut(t *testing.T, e *env, key, val string) {
	t.Helper()
	kv, err := e.js.KeyValue(e.ctx(), "JSCTL_ACKS")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(e.ctx(), key, []byte(val)); err != nil {
		t.Fatal(err)
	}
}

var ackFaults = []ackFault{
	{"older incarnation", regexp.MustCompile(`before the stream was created|for the stream created|earlier stream`), func(t *testing.T, e *env) {
		if err := e.js.DeleteStream(e.ctx(), "W"); err != nil {
			t.Fatal(err)
		}
		seedW(t, e, false)
	}},
	{"unparseable", regexp.MustCompile(`corrupt`), func(t *testing.T, e *env) {
		kvPut(t, e, "r.W.c.s2", "garbage{{")
		kvPut(t, e, "f.W.c.cW/c", "garbage{{")
	}},
	{"hostile subject", regexp.MustCompile(`STREAM\.DELETE\.VICTIM`), func(t *testing.T, e *env) {
		kvPut(t, e, "r.W.c.s2", `{"s":"failed","q":2,"t":true,"n":1,"r":"boom","ls":"$JS.API.STREAM.DELETE.VICTIM","li":"jsctl-dl:x:1:1"}`)
	}},
	{"hostile huge number", regexp.MustCompile(`corrupt`), func(t *testing.T, e *env) {
		kvPut(t, e, "r.W.c.s2", `{"s":"done","q":18446744073709551615,"f":18446744073709551615,"d":18446744073709551615,"n":18446744073709551615,"rt":9223372036854775807}`)
		kvPut(t, e, "f.W.c.cW/c", `{"st":"W","c":"c","rg":[{"b":0,"e":18446744073709551615,"fs":null,"cr":0}]}`)
	}},
	{"far-future and past time", regexp.MustCompile(`implausibly far ahead|lease ran out`), func(t *testing.T, e *env) {
		kvPut(t, e, "r.W.c.s2", fmt.Sprintf(`{"s":"claim","q":2,"x":%d,"w":"ghost"}`, time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()))
		kvPut(t, e, "r.W.c.s3", `{"s":"claim","q":3,"x":1000000000000000000,"w":"ghost"}`)
	}},
}

// ackMatrixWant[reader] is each cell's outcome, in the order of
// ackFaults: rep (the output names the fault), ref (exit 5), una (the
// command does not read that record: consumer copy reads only a scope's
// counts and floors, through the same checked Stats; compact and stats have
// nothing to say of a record they leave). consumer check, snapshot save and
// restore count records, so they report the records they do not count.
// Every reader needs a row.
const (
	rep = "reported"
	ref = "refused"
	una = "unaffected"
)

func cells(outcomes ...string) map[string]string {
	m := map[string]string{}
	for i, o := range outcomes {
		m[ackFaults[i].name] = o
	}
	return m
}

var ackMatrixWant = map[string]map[string]string{
	"acks ls":                   cells(rep, rep, rep, rep, rep),
	"acks get":                  cells(rep, rep, rep, rep, rep),
	"acks stats":                cells(rep, rep, una, rep, una),
	"acks forget":               cells(rep, rep, rep, rep, rep),
	"acks compact":              cells(rep, rep, una, rep, una),
	"consumer check":            cells(rep, rep, una, rep, una),
	"consumer snapshot save":    cells(rep, rep, una, rep, una),
	"consumer snapshot restore": cells(rep, rep, una, rep, una),
	"consumer copy":             cells(una, una, una, una, una),
	"consume":                   cells(rep, rep, rep, rep, rep),
	"consumer reset":            cells(una, rep, una, rep, una),
	"acks retry":                cells(una, rep, rep, rep, una),
}

// seedW creates stream W with 3 messages, its consumer c and, with
// consumed, has jsctl consume them (records s1..s3, floor (0,3]).
func seedW(t *testing.T, e *env, consumed bool) {
	t.Helper()
	ctx := e.ctx()
	if _, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: "W", Subjects: []string{"w.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if _, err := e.js.Publish(ctx, "w.x", fmt.Appendf(nil, "w%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.js.CreateOrUpdateConsumer(ctx, "W", jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 5 * time.Second, MaxDeliver: 5}); err != nil {
		t.Fatal(err)
	}
	if consumed {
		if code, out, errb := e.run("consume", "W", "c", "--max", "3", "--exec", "true"); code != 0 {
			t.Fatalf("seed consume: exit %d\n%s%s", code, out, errb)
		}
	}
}

func TestAckReadersMatrix(t *testing.T) {
	t.Parallel() // each test has its own servers, processes and directories
	if testing.Short() {
		t.Skip("chaos suite: runs real processes")
	}
	var table []string
	for _, f := range ackFaults {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t, natsproc.Options{})
			ctx := testserver.Context(t, 3*time.Minute)
			for _, sc := range []jetstream.StreamConfig{
				{Name: "DEAD", Subjects: []string{"dead.>"}, Duplicates: time.Hour},
				{Name: "VICTIM", Subjects: []string{"victim.>"}},
			} {
				if _, err := e.js.CreateStream(ctx, sc); err != nil {
					t.Fatal(err)
				}
			}
			seedW(t, e, true)
			if _, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: "WM", Mirror: &jetstream.StreamSource{Name: "W"}}); err != nil {
				t.Fatal(err)
			}
			if f.name != "older incarnation" {
				// Consumer c made again (same stream): it delivers 1..3
				// afresh, so consume reads each message's record.
				if err := e.js.DeleteConsumer(ctx, "W", "c"); err != nil {
					t.Fatal(err)
				}
				if _, err := e.js.CreateOrUpdateConsumer(ctx, "W", jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 5 * time.Second, MaxDeliver: 5}); err != nil {
					t.Fatal(err)
				}
			}
			f.apply(t, e)
			seen, err := e.nc.SubscribeSync(">")
			if err != nil {
				t.Fatal(err)
			}
			log := filepath.Join(t.TempDir(), "ran")
			for _, r := range ackReaders {
				args := r.args
				if r.name == "consume" {
					args = []string{"consume", "W", "c", "--max", "3", "--idle", "3s", "--lease", "2s", "--exec", `echo "$JSCTL_SEQ" >> ` + log}
				}
				cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
				cmd := e.command(args...)
				var out strings.Builder
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan struct{})
				go func() { _ = cmd.Wait(); close(done) }()
				select {
				case <-done:
				case <-cctx.Done():
					_ = cmd.Process.Kill()
					<-done
					t.Errorf("%s × %s: still running after 60s (a hang)\n%s", r.name, f.name, out.String())
				}
				cancel()
				code := cmd.ProcessState.ExitCode()
				if testing.Verbose() {
					t.Logf("%s × %s: exit %d\n%s", r.name, f.name, code, out.String())
				}
				got := "unaffected"
				switch {
				case code == 5:
					got = "refused"
				case f.marker.MatchString(out.String()):
					got = "reported"
				}
				table = append(table, fmt.Sprintf("| %s | %s | %s | %d |", r.name, f.name, got, code))
				if code == 2 {
					t.Errorf("%s × %s: exit 2 (the fault blocked the command)\n%s", r.name, f.name, out.String())
				}
				if want := ackMatrixWant[r.name][f.name]; want != got {
					t.Errorf("%s × %s: %s (exit %d), want %s\n%s", r.name, f.name, got, code, want, out.String())
				}
			}
			// Nothing acted on wrongly.
			_ = e.nc.Flush()
			for {
				m, err := seen.NextMsg(0)
				if err != nil {
					break
				}
				if strings.HasPrefix(m.Subject, "$JS.API.STREAM.DELETE.") || strings.HasPrefix(m.Subject, "dead.") || strings.HasPrefix(m.Subject, "victim.") {
					t.Errorf("%s: something published to %q", f.name, m.Subject)
				}
			}
			if _, err := e.js.Stream(ctx, "VICTIM"); err != nil {
				t.Errorf("%s: stream VICTIM: %v", f.name, err)
			}
			ran, _ := os.ReadFile(log)
			runs := strings.Fields(string(ran))
			sort.Strings(runs)
			wantRuns := map[string][]string{
				"older incarnation":        {"1", "2", "3"}, // the new stream's messages all run
				"unparseable":              nil,             // 1 and 3 are done; 2's record does not read: it fails
				"hostile subject":          nil,             // 2 failed for good; its dead letter is not published
				"hostile huge number":      nil,             // 2's record is corrupt: it fails, it is never a duplicate
				"far-future and past time": nil,             // 3's lease ran out (2001): taken over, and the floor proves it done; 2's (2100) is deferred
			}[f.name]
			if !slices.Equal(runs, wantRuns) {
				t.Errorf("%s: consume ran %v, want %v", f.name, runs, wantRuns)
			}
		})
	}
	t.Logf("matrix (%d readers × %d faults = %d cells):\n| command | fault | outcome | exit |\n|---|---|---|---|\n%s",
		len(ackReaders), len(ackFaults), len(ackReaders)*len(ackFaults), strings.Join(table, "\n"))
}

// A command that reads the ack bucket and has no row in the matrix fails
// here: the readers are derived from docs/permissions.md (the bucket
// table's JSCTL_ACKS row, and every command whose permissions name
// KV_JSCTL_ACKS).
func TestAckReadersMatrixCoversEveryReader(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "permissions.md"))
	if err != nil {
		t.Fatal(err)
	}
	need := map[string]bool{}
	name := regexp.MustCompile("`([a-z][a-z /-]*?)(?: --[a-z*-]+)?`")
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "| `JSCTL_ACKS`"):
			cols := strings.Split(line, "|")
			for _, col := range cols[3:] {
				for _, m := range name.FindAllStringSubmatch(col, -1) {
					words := strings.Fields(m[1])
					last := words[len(words)-1]
					for _, alt := range strings.Split(last, "/") {
						n := strings.Join(append(slices.Clone(words[:len(words)-1]), alt), " ")
						if strings.HasPrefix(n, "snapshot ") {
							n = "consumer " + n
						}
						need[n] = true
					}
				}
			}
		case strings.HasPrefix(line, "| `jsctl ") && strings.Contains(line, "KV_JSCTL_ACKS"):
			n := strings.TrimPrefix(line, "| `jsctl ")
			need[n[:strings.IndexByte(n, '`')]] = true
		}
	}
	t.Logf("readers of JSCTL_ACKS: %v", slices.Sorted(maps.Keys(need)))
	if len(need) < 10 {
		t.Fatalf("found only %d readers of JSCTL_ACKS in docs/permissions.md: %v", len(need), need)
	}
	have := map[string]bool{}
	for _, r := range ackReaders {
		have[r.name] = true
	}
	for n := range need {
		if !have[n] {
			t.Errorf("command %q reads JSCTL_ACKS (docs/permissions.md) but has no row in the ack readers' matrix (ackReaders)", n)
		}
	}
}
