//go:build linux

package commands_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/hinshun/vt10x"
	"github.com/jsctl/jsctl/commands"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sys/unix"
)

// pickFixture is a server with stream ORDERS holding messages in four
// different seconds (groups of three), stream OTHER, and the durable pull
// consumers "billing" (everything delivered and acknowledged) and "audit".
type pickFixture struct {
	t      *testing.T
	url    string
	js     jetstream.JetStream
	bin    string
	groups [][]jetstream.RawStreamMsg // each group's messages, one second apart or more
}

func newPickFixture(t *testing.T) *pickFixture {
	t.Helper()
	bin, err := exec.LookPath("jsctl")
	if err != nil {
		t.Fatalf("jsctl is not in PATH: %v", err)
	}
	s := testserver.Start(t)
	js, err := jetstream.New(testserver.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testserver.Context(t, time.Minute)
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"other.>"}}); err != nil {
		t.Fatal(err)
	}
	f := &pickFixture{t: t, url: s.ClientURL(), js: js, bin: bin}
	seq := uint64(0)
	for g := 0; g < 4; g++ {
		// Each group goes into a second of its own, early in it so that
		// its three messages share it: wait (bounded) for the clock.
		var last time.Time
		if g > 0 {
			last = f.groups[g-1][2].Time.Truncate(time.Second)
		}
		testserver.WaitFor(t, 5*time.Second, "the start of a new second", func() bool {
			now := time.Now()
			return now.Truncate(time.Second).After(last) && now.Sub(now.Truncate(time.Second)) < 300*time.Millisecond
		})
		var group []jetstream.RawStreamMsg
		for i := 0; i < 3; i++ {
			subj := "orders.eu"
			if i == 1 {
				subj = "orders.us"
			}
			if _, err := js.Publish(ctx, subj, fmt.Appendf(nil, `{"group":%d,"i":%d}`, g, i)); err != nil {
				t.Fatal(err)
			}
			seq++
			m, err := st.GetMsg(ctx, seq)
			if err != nil {
				t.Fatal(err)
			}
			group = append(group, *m)
		}
		if g := group[0].Time.Truncate(time.Second); !group[2].Time.Truncate(time.Second).Equal(g) {
			t.Fatalf("group %d straddles a second (%s..%s): publishing took over 700ms", len(f.groups), group[0].Time, group[2].Time)
		}
		f.groups = append(f.groups, group)
	}
	for _, name := range []string{"billing", "audit"} {
		if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := js.Consumer(ctx, "ORDERS", "billing")
	if err != nil {
		t.Fatal(err)
	}
	batch, err := c.Fetch(12, jetstream.FetchMaxWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for m := range batch.Messages() {
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 12 {
		t.Fatalf("fetched %d messages, want 12", n)
	}
	return f
}

func (f *pickFixture) env(extra ...string) []string {
	return append(append(os.Environ(), "NATS_URL="+f.url, "JSCTL_TZ=UTC", "NATS_CONTEXT=", "JSCTL_EMBEDDED=", "XDG_CONFIG_HOME="+f.t.TempDir(), "TERM=xterm-256color", "NO_COLOR="), extra...)
}

func (f *pickFixture) cmd(args ...string) *exec.Cmd {
	cmd := exec.Command(f.bin, args...)
	cmd.Env = f.env()
	return cmd
}

// seekSequence is what `jsctl seek ORDERS TIME` answers.
func (f *pickFixture) seekSequence(at string, extra ...string) uint64 {
	f.t.Helper()
	out, err := f.cmd(append([]string{"seek", "ORDERS", at}, extra...)...).Output()
	if err != nil {
		f.t.Fatalf("jsctl seek ORDERS %q: %v", at, err)
	}
	m := regexp.MustCompile(`(?m)^Sequence: (\d+)$`).FindSubmatch(out)
	if m == nil {
		f.t.Fatalf("jsctl seek ORDERS %q printed no sequence:\n%s", at, out)
	}
	n, _ := strconv.ParseUint(string(m[1]), 10, 64)
	return n
}

// consumerInfo is billing's state.
func (f *pickFixture) consumerInfo(name string) *jetstream.ConsumerInfo {
	f.t.Helper()
	ctx := testserver.Context(f.t, 10*time.Second)
	c, err := f.js.Consumer(ctx, "ORDERS", name)
	if err != nil {
		f.t.Fatal(err)
	}
	return c.CachedInfo()
}

// vtProc is jsctl on a pseudo-terminal whose output is read through a
// terminal emulator, so the test sees the screen a person sees.
type vtProc struct {
	*ptyProc
	vt vt10x.Terminal
}

func startVT(t *testing.T, cmd *exec.Cmd, cols, rows int) *vtProc {
	t.Helper()
	p := &vtProc{}
	p.ptyProc = startTerminal(t, cmd, cols, rows, func(tty *os.File) io.Writer {
		// The emulator's answers to queries go back to the program, as
		// a terminal's do.
		p.vt = vt10x.New(vt10x.WithSize(cols, rows), vt10x.WithWriter(tty))
		return p.vt
	})
	p.show = p.screen
	return p
}

// screen is the emulator's screen, one string per row.
func (p *vtProc) screen() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.vt.String()
}

// waitScreen waits, bounded, until the screen satisfies ok.
func (p *vtProc) waitScreen(what string, ok func(screen string) bool) string {
	p.t.Helper()
	var s string
	deadline := time.Now().Add(testserver.MinWait)
	for {
		s = p.screen()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the screen never showed %s; screen:\n%s", what, s)
		}
		select {
		case err := <-p.done:
			p.done <- err
			select { // what it wrote before it ended may not be read yet
			case <-p.eof:
			case <-time.After(10 * time.Second):
			}
			s = p.screen()
			if ok(s) {
				return s
			}
			p.t.Fatalf("jsctl ended (%v) before the screen showed %s; screen:\n%s\nraw:\n%q", err, what, s, p.output())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (p *vtProc) waitFor(text string) string {
	p.t.Helper()
	return p.waitScreen(strconv.Quote(text), func(s string) bool { return strings.Contains(s, text) })
}

// settled waits until the pick screen shows the answer for its cursor
// (no lookup in progress) and returns the time and sequence shown.
func (p *vtProc) settled() (string, uint64) {
	p.t.Helper()
	rx := regexp.MustCompile(`Time: (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC  \((\w+)\)\s*\n(?s:.*)Sequence: (\d+)`)
	// The same answer on two looks in a row: a look may fall between
	// two writes of one frame.
	prev := ""
	s := p.waitScreen("a settled answer", func(s string) bool {
		ok := rx.MatchString(s) && !strings.Contains(s, "looking up") && s == prev
		prev = s
		return ok
	})
	m := rx.FindStringSubmatch(s)
	n, _ := strconv.ParseUint(m[3], 10, 64)
	return m[1], n
}

const (
	keyLeft  = "\x1b[D"
	keyRight = "\x1b[C"
	keyUp    = "\x1b[A"
	keyDown  = "\x1b[B"
	keyPgUp  = "\x1b[5~"
	keyPgDn  = "\x1b[6~"
	keyEnter = "\r"
	keyEsc   = "\x1b"
)

// checkAgainstSeek asserts that the screen's Sequence is what jsctl seek
// answers for the time shown.
func (f *pickFixture) checkAgainstSeek(p *vtProc, step string) (string, uint64) {
	f.t.Helper()
	at, seq := p.settled()
	if want := f.seekSequence(at); seq != want {
		f.t.Fatalf("%s: the picker shows Sequence %d at %s, jsctl seek answers %d; screen:\n%s", step, seq, at, want, p.screen())
	}
	return at, seq
}

// cooked says whether the terminal is in line mode with echo, as a shell
// leaves it (a running picker puts it in raw mode).
func cooked(t *testing.T, tty *os.File) bool {
	t.Helper()
	tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	return tio.Lflag&unix.ICANON != 0 && tio.Lflag&unix.ECHO != 0
}

// flat is the screen's text with its rows joined, for messages that wrap.
func flat(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		b.WriteString(strings.TrimRight(l, " "))
	}
	return b.String()
}

// colorSGR matches a select-graphic-rendition sequence that sets a
// foreground or background colour.
var colorSGR = regexp.MustCompile(`\x1b\[([0-9]+;)*(3[0-8]|4[0-8]|9[0-7]|10[0-7])(;[0-9]+)*m`)

func humanSecond(t time.Time) string {
	return t.UTC().Truncate(time.Second).Format("2006-01-02 15:04:05")
}

// TestPickPTY drives jsctl pick on a terminal like a person: chooses the
// stream and the consumer from the lists, types a time, steps with the
// keys (each answer checked against jsctl seek), reviews, applies, and
// checks the consumer's next delivery with a plain client.
func TestPickPTY(t *testing.T) {
	t.Parallel() // mostly waits (on processes, servers, timers): runs beside the others
	f := newPickFixture(t)
	p := startVT(t, f.cmd("pick"), 100, 30)
	p.waitFor("OTHER")
	p.waitFor("ORDERS")
	p.send("ord")
	s := p.waitScreen("the list filtered to ORDERS", func(s string) bool { return strings.Contains(s, "ORDERS") && !strings.Contains(s, "OTHER") })
	if !strings.Contains(s, "Type to filter: ord") {
		t.Fatalf("the filter is not shown:\n%s", s)
	}
	p.send(keyEnter)
	p.waitFor("audit")
	p.send("bil" + keyEnter)
	p.waitFor("Consumer: billing")
	p.waitFor("Position: delivered 12, ack floor 12")
	f.checkAgainstSeek(p, "the first cursor")

	// Type the second of group 1: its first message.
	g1 := f.groups[1][0]
	p.send("t")
	p.waitFor("Go to time:")
	p.send(humanSecond(g1.Time) + keyEnter)
	p.waitFor("Time: " + humanSecond(g1.Time))
	at, seq := f.checkAgainstSeek(p, "a typed time")
	if want := f.seekSequence(humanSecond(g1.Time)); seq != want || at != humanSecond(g1.Time) {
		t.Fatalf("typed %s: shows %s, sequence %d, want %d", humanSecond(g1.Time), at, seq, want)
	}
	for _, k := range []struct{ name, key string }{
		{"→", keyRight}, {"←", keyLeft}, {"↓", keyDown}, {"↓", keyDown}, {"↑", keyUp}, {"]", "]"}, {"[", "["},
		{"PgDn", keyPgDn}, {"PgUp", keyPgUp},
	} {
		before, _ := p.settled()
		p.send(k.key)
		p.waitScreen("the cursor to move on "+k.name, func(s string) bool { return !strings.Contains(s, "Time: "+before+" ") })
		f.checkAgainstSeek(p, "after "+k.name)
	}
	// ↓ from group 1 lands on group 2's first message.
	p.send("t")
	p.send(humanSecond(g1.Time) + keyEnter)
	p.waitFor("Time: " + humanSecond(g1.Time))
	p.settled()
	p.send(keyDown)
	g2 := f.groups[2][0]
	p.waitFor("Time: " + humanSecond(g2.Time))
	if _, seq := f.checkAgainstSeek(p, "↓ to the next message"); seq != f.seekSequence(humanSecond(g2.Time)) {
		t.Fatalf("↓ shows sequence %d", seq)
	}
	// Back to group 1, review and apply.
	p.send(keyUp)
	p.waitFor("Time: " + humanSecond(g1.Time))
	_, target := f.checkAgainstSeek(p, "↑ back")
	p.waitFor("Plan: redeliver")
	p.send(keyEnter)
	s = p.waitFor("Apply this change?")
	if !strings.Contains(s, "redelivers") || !strings.Contains(s, strconv.FormatUint(target, 10)) {
		t.Fatalf("the review lacks the messages to redeliver:\n%s", s)
	}
	p.send("y")
	if code := p.exit(30 * time.Second); code != 0 {
		t.Fatalf("apply: exit %d; screen:\n%s", code, p.screen())
	}
	p.waitFor("verified")
	ci := f.consumerInfo("billing")
	if ci.Delivered.Stream != target-1 {
		t.Fatalf("after apply billing delivered %d, want %d", ci.Delivered.Stream, target-1)
	}
	ctx := testserver.Context(t, 20*time.Second)
	c, err := f.js.Consumer(ctx, "ORDERS", "billing")
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.Next(jetstream.FetchMaxWait(10 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	md, _ := m.Metadata()
	if md.Sequence.Stream != target {
		t.Fatalf("billing's next message is %d, want %d", md.Sequence.Stream, target)
	}
}

// TestPickLeaveAndManners: leaving changes nothing (exit 6); the screen
// fits 80×24 and follows a resize; NO_COLOR drops colours; seek -i prints
// what seek prints; without a terminal the commands refuse (exit 2).
func TestPickLeaveAndManners(t *testing.T) {
	t.Parallel() // mostly waits (on processes, servers, timers): runs beside the others
	f := newPickFixture(t)
	before := f.consumerInfo("audit")

	cmd := f.cmd("consumer", "reset", "ORDERS", "audit", "-i")
	p := startVT(t, cmd, 80, 24)
	p.settled()
	s := p.screen()
	if rows := strings.Split(strings.TrimRight(s, "\n"), "\n"); !strings.Contains(rows[len(rows)-1], "←/→ 1s") && !strings.Contains(s, "←/→ 1s") {
		t.Fatalf("the key line is not on the 80×24 screen:\n%s", s)
	}
	if !colorSGR.MatchString(p.output()) {
		t.Fatalf("without NO_COLOR the header has no colour; raw:\n%q", p.output())
	}
	p.send(keyLeft)
	p.settled()
	// Resize to 60×20: the screen is drawn again to fit.
	if err := pty.Setsize(p.tty, &pty.Winsize{Rows: 20, Cols: 60}); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.vt.Resize(60, 20)
	p.mu.Unlock()
	p.send(keyRight) // a redraw after the resize
	p.waitScreen("the key line within 60 columns", func(s string) bool { return strings.Contains(s, "←/→ 1s [/] 1min") })
	p.settled()
	p.send("q")
	if code := p.exit(30 * time.Second); code != commands.ExitCancelled {
		t.Fatalf("q: exit %d, want %d; screen:\n%s", code, commands.ExitCancelled, p.screen())
	}
	p.waitScreen("the cancellation", func(s string) bool { return strings.Contains(flat(s), "left without applying; nothing changed") })
	if after := f.consumerInfo("audit"); after.Delivered != before.Delivered || after.AckFloor != before.AckFloor {
		t.Fatalf("leaving changed audit: %+v → %+v", before.Delivered, after.Delivered)
	}

	// NO_COLOR: no colour sequences at all.
	cmd = f.cmd("pick", "ORDERS", "audit")
	cmd.Env = f.env("NO_COLOR=1")
	p = startVT(t, cmd, 80, 24)
	p.settled()
	if raw := p.output(); colorSGR.MatchString(raw) {
		t.Fatalf("NO_COLOR set, but colours were drawn:\n%q", raw)
	}
	if cooked(t, p.tty) {
		t.Fatal("the picker runs with the terminal in cooked mode")
	}
	p.send("\x03") // Ctrl-C
	if code := p.exit(30 * time.Second); code != commands.ExitCancelled {
		t.Fatalf("Ctrl-C: exit %d", code)
	}
	if !cooked(t, p.tty) || !p.leftAltScreen() {
		t.Fatalf("the terminal is not restored after Ctrl-C (cooked %v); raw:\n%q", cooked(t, p.tty), p.output())
	}

	// A lost terminal (SIGHUP) or a signal: restored too, nothing changed.
	cmd = f.cmd("pick", "ORDERS", "audit")
	p = startVT(t, cmd, 80, 24)
	p.settled()
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if code := p.exit(30 * time.Second); code != commands.ExitCancelled {
		t.Fatalf("SIGHUP: exit %d, want %d", code, commands.ExitCancelled)
	}
	if !cooked(t, p.tty) || !p.leftAltScreen() {
		t.Fatalf("the terminal is not restored after SIGHUP; raw:\n%q", p.output())
	}
	if after := f.consumerInfo("audit"); after.Delivered != before.Delivered {
		t.Fatalf("SIGHUP changed audit")
	}

	// seek -i: Enter prints what seek prints for the chosen time.
	g2 := humanSecond(f.groups[2][0].Time)
	p = startVT(t, f.cmd("seek", "ORDERS", "-i", "--mode", "before"), 100, 30)
	p.settled()
	p.send("t" + g2 + keyEnter)
	p.waitFor("Time: " + g2 + " UTC  (before)")
	p.settled()
	p.send(keyEnter)
	if code := p.exit(30 * time.Second); code != 0 {
		t.Fatalf("seek -i: exit %d", code)
	}
	want, err := f.cmd("seek", "ORDERS", g2, "--mode", "before").Output()
	if err != nil {
		t.Fatal(err)
	}
	wantText := strings.TrimSpace(string(want))
	p.waitScreen("seek's output", func(s string) bool {
		return strings.Contains(strings.Join(strings.Fields(s), " "), strings.Join(strings.Fields(wantText), " "))
	})

	// No terminal: refused at once, exit 2.
	for _, args := range [][]string{{"pick"}, {"pick", "ORDERS", "audit"}, {"consumer", "reset", "ORDERS", "audit", "-i"}, {"seek", "ORDERS", "--interactive"}} {
		null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		cmd := f.cmd(args...)
		var stderr bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = null, null, &stderr
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = cmd.Run()
		cancel()
		null.Close()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != commands.ExitUsage || !strings.Contains(stderr.String(), "needs a terminal; use --to-time") {
			t.Fatalf("%v without a terminal: %v, stderr %q; want exit %d and the refusal", args, err, stderr.String(), commands.ExitUsage)
		}
		_ = ctx
	}

	// --show-messages: the first and last messages billing would get again,
	// with their count, in text and in JSON.
	out, err := f.cmd("consumer", "reset", "ORDERS", "billing", "--to-seq", "2", "--show-messages", "3").Output()
	if err != nil {
		t.Fatal(err)
	}
	rx := regexp.MustCompile(`(?s)billing: redelivers 11 messages within its filters; the first and the last:\n +2  [^\n]+ orders\.us  \d+ bytes\n +3  [^\n]+\n +…\n +12  [^\n]+ orders\.eu  \d+ bytes\n`)
	if !rx.Match(out) {
		t.Fatalf("--show-messages 3:\n%s", out)
	}
	out, err = f.cmd("consumer", "reset", "ORDERS", "billing", "--to-seq", "2", "--show-messages", "3", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Changes []struct {
			Messages []struct {
				Seq     uint64 `json:"seq"`
				Subject string `json:"subject"`
				Size    int    `json:"size"`
				Time    string `json:"time"`
			} `json:"messages"`
			Total uint64 `json:"messages_total"`
		} `json:"changes"`
	}
	if err := json.Unmarshal(out, &doc); err != nil || len(doc.Changes) != 1 || doc.Changes[0].Total != 11 || len(doc.Changes[0].Messages) != 3 ||
		doc.Changes[0].Messages[2].Seq != 12 || doc.Changes[0].Messages[0].Time == "" {
		t.Fatalf("--show-messages 3 --json (%v):\n%s", err, out)
	}
}

// leftAltScreen waits (bounded) until the terminal has received the
// sequence that leaves the alternate screen: the process may have exited
// before the reader took its last bytes from the pty.
func (p *vtProc) leftAltScreen() bool {
	deadline := time.Now().Add(testserver.MinWait)
	for !strings.Contains(p.output(), "\x1b[?1049l") {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond) // poll interval of a bounded wait
	}
	return true
}
