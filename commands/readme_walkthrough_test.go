package commands_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/commands"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go/jetstream"
)

// walkthroughStep is the delay inserted before each jsctl step of the
// README's five minutes: the reader may run each step much later than the
// traffic (a coffee, a meeting, the next day).
const walkthroughStep = 7 * time.Hour

// TestReadmeWalkthroughAnySpeed runs the README's "Five minutes with your
// own server" as written, its nats lines done by the test, with every jsctl
// step run as if walkthroughStep later than the one before (an injected
// clock: relative times count from it; no real waiting). Each step must
// show what the README says however late it runs: the seek finds order
// B-1, the plan is a real rewind (25 redelivered, nothing skipped, no
// forward-move warning), the consumer then delivers B-1 first, the handler
// skips the B orders once (done) and runs them again after --forget-acks.
// A control step proves the clock is applied: the old walkthrough's
// "seek ORDERS -30s" finds nothing that late.
func TestReadmeWalkthroughAnySpeed(t *testing.T) {
	t.Parallel() // waits on a server and on consume's idle timeouts
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	i := strings.Index(page, "## Five minutes with your own server")
	if i < 0 {
		t.Fatal("README.md has no section \"Five minutes with your own server\"")
	}
	section := page[i:]
	if j := strings.Index(section[3:], "\n## "); j >= 0 {
		section = section[:j+3]
	}
	var lines []string
	for _, blk := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1) {
		for _, l := range strings.Split(strings.TrimRight(blk[1], "\n"), "\n") {
			if k := strings.Index(l, "  #"); k >= 0 {
				l = l[:k]
			}
			if l = strings.TrimSpace(l); l != "" {
				lines = append(lines, l)
			}
		}
	}

	s := testserver.Start(t)
	js, err := jetstream.New(testserver.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testserver.Context(t, 5*time.Minute)
	var mark string
	clock := time.Duration(0) // how much later than the traffic the step runs
	run := func(args ...string) (int, string) {
		t.Helper()
		var out bytes.Buffer
		code := commands.RunAt(ctx, func() time.Time { return time.Now().Add(clock) }, append([]string{"--server", s.ClientURL(), "--tz", "UTC"}, args...), strings.NewReader(""), &out, &out, false)
		return code, out.String()
	}
	publish := func(line string) {
		m := regexp.MustCompile(`^nats pub (\S+) '(.*)' --count (\d+)`).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("README line %q: not a nats pub this test knows", line)
		}
		var n int
		fmt.Sscan(m[3], &n)
		for k := 1; k <= n; k++ {
			if _, err := js.Publish(ctx, m[1], []byte(strings.ReplaceAll(m[2], "{{Count}}", fmt.Sprint(k)))); err != nil {
				t.Fatal(err)
			}
		}
	}
	handled := func(out, batch string) int { return strings.Count(out, `"id":"`+batch+`-`) }
	next := func() uint64 {
		c, err := js.Consumer(ctx, "ORDERS", "worker")
		if err != nil {
			t.Fatal(err)
		}
		return c.CachedInfo().Delivered.Stream + 1
	}
	consumes := 0
	for _, line := range lines {
		switch {
		case line == "nats-server -js &":
		case strings.HasPrefix(line, "nats stream add ORDERS --subjects 'orders.>'"):
			if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(line, "nats consumer add ORDERS worker --pull"):
			if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "worker", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(line, "nats pub "):
			publish(line)
		case strings.HasPrefix(line, "sleep 1; MARK=$(date -u "):
			// The moment after the last message so far (the README's
			// whole second after a sleep of 1s is that too).
			st, err := js.Stream(ctx, "ORDERS")
			if err != nil {
				t.Fatal(err)
			}
			last, err := st.GetMsg(ctx, st.CachedInfo().State.LastSeq)
			if err != nil {
				t.Fatal(err)
			}
			mark = last.Time.Add(time.Nanosecond).UTC().Format(time.RFC3339Nano)
		case strings.HasPrefix(line, "jsctl "):
			if mark == "" && strings.Contains(line, "$MARK") {
				t.Fatalf("README line %q uses $MARK before it is set", line)
			}
			clock += walkthroughStep
			args := shellFields(t, strings.ReplaceAll(strings.TrimPrefix(line, "jsctl "), "$MARK", mark))
			code, out := run(args...)
			if code != 0 {
				t.Fatalf("%s later, %q: exit %d\n%s", clock, line, code, out)
			}
			switch {
			case args[0] == "consume":
				consumes++
				want := map[int][2]int{1: {25, 25}, 2: {0, 0}, 3: {0, 25}}[consumes]
				if a, b := handled(out, "A"), handled(out, "B"); a != want[0] || b != want[1] {
					t.Fatalf("%s later, consume #%d: the handler ran for %d A and %d B orders, want %d and %d\n%s", clock, consumes, a, b, want[0], want[1], out)
				}
			case args[0] == "seek":
				if !strings.Contains(out, `B-1"`) || strings.Contains(out, "no message at or after") {
					t.Fatalf("%s later, %q does not find order B-1:\n%s", clock, line, out)
				}
			case strings.HasPrefix(line, "jsctl consumer reset") && !strings.Contains(line, "--execute"):
				if strings.Contains(out, "moves the consumer forward") {
					t.Fatalf("%s later, the plan is no rewind:\n%s", clock, out)
				}
				_, doc := run(append(args, "--json")...)
				var plan struct {
					Changes []struct {
						Redeliver, Skip, NeverDelivered uint64
						To                              struct{ Sequence uint64 }
					}
				}
				if err := json.Unmarshal([]byte(doc), &plan); err != nil || len(plan.Changes) != 1 {
					t.Fatalf("%s later, plan --json: %v\n%s", clock, err, doc)
				}
				if c := plan.Changes[0]; c.To.Sequence != 26 || c.Redeliver != 25 || c.Skip != 0 || c.NeverDelivered != 0 {
					t.Fatalf("%s later, the plan is not the rewind to B-1 (sequence 26, redeliver 25, skip 0): %+v", clock, c)
				}
			case strings.HasPrefix(line, "jsctl consumer reset"):
				if n := next(); n != 26 {
					t.Fatalf("%s later, after %q the next delivery is %d, want 26 (order B-1)", clock, line, n)
				}
			}
		default:
			t.Fatalf("README line %q: a line of the walkthrough this test does not know; teach it", line)
		}
	}
	if consumes != 3 || mark == "" {
		t.Fatalf("the walkthrough ran consume %d times (want 3) and set MARK %v", consumes, mark != "")
	}
	// The control: the old walkthrough's relative time, that late, finds
	// nothing: the clock is applied, and the README must not rely on now.
	if code, out := run("seek", "ORDERS", "-30s"); code != 0 || !strings.Contains(out, "no message at or after") {
		t.Fatalf("%s later, seek -30s: exit %d, want the message that nothing is there:\n%s", clock, code, out)
	}
}

// shellFields splits a command line as sh does for the README's simple
// lines: words separated by blanks, single and double quotes (no escapes,
// no expansions).
func shellFields(t *testing.T, line string) []string {
	t.Helper()
	var out []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		case c == '\\' || c == '$' || c == '`' || c == '|' || c == ';' || c == '&' || c == '>' || c == '<':
			t.Fatalf("README line %q: %q needs a shell; keep the walkthrough's jsctl lines plain", line, c)
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		t.Fatalf("README line %q: unterminated quote", line)
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}
