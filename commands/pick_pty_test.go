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
	"github.com/jsctl/jsctl/jsutil/audit"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sys/unix"
)

// pickFixture is a server with stream ORDERS holding groups of messages,
// each group within a second of its own (by default four groups of three;
// subjects alternate orders.eu and orders.us), stream OTHER, and the
// durable pull consumers "billing" (everything delivered and
// acknowledged) and "audit".
type pickFixture struct {
	t      *testing.T
	url    string
	js     jetstream.JetStream
	bin    string
	groups [][]jetstream.RawStreamMsg // each group's messages, one second apart or more
}

func newPickFixture(t *testing.T) *pickFixture {
	t.Helper()
	s := testserver.Start(t)
	return buildPickFixture(t, s.ClientURL(), testserver.Connect(t, s), 3, 3, 3, 3)
}

// buildPickFixture fills the server at url (nc connected to it) with
// groups of messages of the given sizes. A group that does not fit in its
// second (a machine too busy to publish it within 700ms) is not an error:
// the streams are made again, at most five times.
func buildPickFixture(t *testing.T, url string, nc *nats.Conn, sizes ...int) *pickFixture {
	t.Helper()
	bin, err := exec.LookPath("jsctl")
	if err != nil {
		t.Fatalf("jsctl is not in PATH: %v", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testserver.Context(t, 5*time.Minute)
	f := &pickFixture{t: t, url: url, js: js, bin: bin}
	for attempt := 1; !f.publish(ctx, sizes); attempt++ {
		if attempt == 5 {
			t.Fatalf("5 times a group of messages straddled a second (publishing took over 700ms)")
		}
		for _, name := range []string{"ORDERS", "OTHER"} {
			if err := js.DeleteStream(ctx, name); err != nil {
				t.Fatal(err)
			}
		}
	}
	seq := uint64(len(f.all()))
	for _, name := range []string{"billing", "audit"} {
		if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := js.Consumer(ctx, "ORDERS", "billing")
	if err != nil {
		t.Fatal(err)
	}
	batch, err := c.Fetch(int(seq), jetstream.FetchMaxWait(10*time.Second))
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
	if n != int(seq) {
		t.Fatalf("fetched %d messages, want %d", n, seq)
	}
	return f
}

// publish makes the streams and publishes the groups; false when a group
// straddled a second.
func (f *pickFixture) publish(ctx context.Context, sizes []int) bool {
	t := f.t
	t.Helper()
	st, err := f.js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.js.CreateStream(ctx, jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"other.>"}}); err != nil {
		t.Fatal(err)
	}
	f.groups = nil
	seq := uint64(0)
	for g, size := range sizes {
		// Each group goes into a second of its own, early in it so that
		// its messages share it: wait (bounded) for the clock.
		var last time.Time
		if g > 0 {
			prev := f.groups[g-1]
			last = prev[len(prev)-1].Time.Truncate(time.Second)
		}
		testserver.WaitFor(t, 5*time.Second, "the start of a new second", func() bool {
			now := time.Now()
			return now.Truncate(time.Second).After(last) && now.Sub(now.Truncate(time.Second)) < 300*time.Millisecond
		})
		var group []jetstream.RawStreamMsg
		for i := 0; i < size; i++ {
			subj := "orders.eu"
			if i%2 == 1 {
				subj = "orders.us"
			}
			if _, err := f.js.Publish(ctx, subj, fmt.Appendf(nil, `{"group":%d,"i":%d}`, g, i)); err != nil {
				t.Fatal(err)
			}
			seq++
			m, err := st.GetMsg(ctx, seq)
			if err != nil {
				t.Fatal(err)
			}
			group = append(group, *m)
		}
		if first := group[0].Time.Truncate(time.Second); !group[len(group)-1].Time.Truncate(time.Second).Equal(first) {
			t.Logf("group %d straddles a second (%s..%s): publishing took over 700ms; again", g, group[0].Time, group[len(group)-1].Time)
			return false
		}
		f.groups = append(f.groups, group)
	}
	return true
}

// all is every message of ORDERS, in order.
func (f *pickFixture) all() []jetstream.RawStreamMsg {
	var out []jetstream.RawStreamMsg
	for _, g := range f.groups {
		out = append(out, g...)
	}
	return out
}

// next is the sequence a consumer of ORDERS created with filter, reset to
// a sequence, delivers first: read with a plain nats.go client.
func (f *pickFixture) next(consumer string) uint64 {
	f.t.Helper()
	ctx := testserver.Context(f.t, 20*time.Second)
	c, err := f.js.Consumer(ctx, "ORDERS", consumer)
	if err != nil {
		f.t.Fatal(err)
	}
	m, err := c.Next(jetstream.FetchMaxWait(10 * time.Second))
	if err != nil {
		f.t.Fatalf("the next delivery of %s: %v", consumer, err)
	}
	md, err := m.Metadata()
	if err != nil {
		f.t.Fatal(err)
	}
	return md.Sequence.Stream
}

func (f *pickFixture) env(extra ...string) []string {
	return append(append(os.Environ(), "NATS_URL="+f.url, "JSCTL_TZ=UTC", "NATS_CONTEXT=", "JSCTL_EMBEDDED=", "XDG_CONFIG_HOME="+f.t.TempDir(), "TERM=xterm-256color", "NO_COLOR="), extra...)
}

func (f *pickFixture) cmd(args ...string) *exec.Cmd {
	cmd := exec.Command(f.bin, args...)
	cmd.Env = f.env()
	return cmd
}

// seekSequence is what `jsctl seek ORDERS TIME [flags]` answers.
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

// shownTime is the Time line of the pick screen: the time (in UTC, to
// the nanosecond it holds) and the mode.
var shownTime = regexp.MustCompile(`Time: (–|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?) (?:UTC )? \((\w+)\)`)

// settled waits until the pick screen shows the answer for its cursor
// (no lookup in progress) and returns the time and sequence shown.
func (p *vtProc) settled() (string, uint64) {
	p.t.Helper()
	at, _, seq, _ := p.settledScreen()
	return at, seq
}

// settledScreen is settled with the mode and the whole screen.
func (p *vtProc) settledScreen() (at, mode string, seq uint64, screen string) {
	p.t.Helper()
	rx := regexp.MustCompile(shownTime.String() + `\s*\n(?s:.*)Sequence: (\d+)`)
	// The same answer on two looks in a row: a look may fall between
	// two writes of one frame.
	prev := ""
	s := p.waitScreen("a settled answer", func(s string) bool {
		ok := rx.MatchString(s) && !strings.Contains(s, "looking up") && !strings.Contains(s, "Plan: …") && s == prev
		prev = s
		return ok
	})
	m := rx.FindStringSubmatch(s)
	n, _ := strconv.ParseUint(m[3], 10, 64)
	return m[1], m[2], n, s
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
// answers for the time and the mode shown.
func (f *pickFixture) checkAgainstSeek(p *vtProc, step string) (string, uint64) {
	f.t.Helper()
	at, mode, seq, _ := p.settledScreen()
	if want := f.seekSequence(at, "--mode", mode); seq != want {
		f.t.Fatalf("%s: the picker shows Sequence %d at %s (%s), jsctl seek answers %d; screen:\n%s", step, seq, at, mode, want, p.screen())
	}
	return at, seq
}

// typeTime opens the time line, types at and goes there.
func (p *vtProc) typeTime(at string) {
	p.t.Helper()
	p.send("t")
	p.waitFor("Go to time:")
	p.send(at + keyEnter)
}

// nanoText is t as the picker shows it: to the nanosecond it holds.
func nanoText(t time.Time) string {
	return t.UTC().Format("2006-01-02 15:04:05.999999999")
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

// words is the screen's text with every run of blanks (and row ends) as
// one space, for prose that wraps.
func words(s string) string { return strings.Join(strings.Fields(s), " ") }

// colorSGR matches a select-graphic-rendition sequence that sets a
// foreground or background colour.
var colorSGR = regexp.MustCompile(`\x1b\[([0-9]+;)*(3[0-8]|4[0-8]|9[0-7]|10[0-7])(;[0-9]+)*m`)

func humanSecond(t time.Time) string {
	return t.UTC().Truncate(time.Second).Format("2006-01-02 15:04:05")
}

// TestPickPTY drives jsctl pick on a terminal like a person: chooses the
// stream and the consumer from the lists, types a time, moves with the
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
	// billing has acknowledged everything: it opens past the last message.
	if _, seq := p.settled(); seq != 13 {
		t.Fatalf("billing opens at %d, want 13 (its ack floor + 1); screen:\n%s", seq, p.screen())
	}
	p.waitFor("first delivery is the next message stored (sequence 13)")

	// Type the second of group 1: its first message.
	g1 := f.groups[1]
	p.typeTime(humanSecond(g1[0].Time))
	p.waitFor("Time: " + humanSecond(g1[0].Time) + " UTC")
	at, seq := f.checkAgainstSeek(p, "a typed time")
	if seq != g1[0].Sequence || at != humanSecond(g1[0].Time) {
		t.Fatalf("typed %s: shows %s, sequence %d, want %d", humanSecond(g1[0].Time), at, seq, g1[0].Sequence)
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
	// ↓ from group 1's first message is its second, in the same second.
	p.typeTime(humanSecond(g1[0].Time))
	p.waitFor("Time: " + humanSecond(g1[0].Time) + " UTC")
	p.settled()
	p.send(keyDown)
	p.waitFor("Time: " + nanoText(g1[1].Time) + " UTC  (after)")
	if _, seq := f.checkAgainstSeek(p, "↓ to the next message"); seq != g1[1].Sequence {
		t.Fatalf("↓ shows sequence %d, want %d", seq, g1[1].Sequence)
	}
	// Back to group 1's first, review and apply.
	p.send(keyUp)
	p.waitFor("Time: " + nanoText(g1[0].Time) + " UTC  (after)")
	_, target := f.checkAgainstSeek(p, "↑ back")
	p.waitFor(fmt.Sprintf("Plan: first delivery %d, redeliver", target))
	p.send(keyEnter)
	s = p.waitFor("Apply this change?")
	if !strings.Contains(s, "redelivers") || !strings.Contains(words(s), fmt.Sprintf("so that its first delivery is message %d", target)) {
		t.Fatalf("the review lacks the messages to redeliver or the first delivery:\n%s", s)
	}
	p.send("y")
	if code := p.exit(30 * time.Second); code != 0 {
		t.Fatalf("apply: exit %d; screen:\n%s", code, p.screen())
	}
	p.waitFor("verified")
	if ci := f.consumerInfo("billing"); ci.Delivered.Stream != target-1 {
		t.Fatalf("after apply billing delivered %d, want %d", ci.Delivered.Stream, target-1)
	}
	if got := f.next("billing"); got != target {
		t.Fatalf("billing's next message is %d, want %d", got, target)
	}
	// The change chosen on the screen is audited as any reset.
	actx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	as, err := f.js.Stream(actx, audit.Stream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := as.GetLastMsgForSubject(actx, audit.Subject(audit.Reset, "ORDERS", "billing"))
	if err != nil {
		t.Fatalf("no audit event of the pick: %v", err)
	}
	ev, err := audit.Decode(m.Data)
	if err != nil || ev.Outcome != audit.Verified || ev.After == nil || ev.After.Delivered != target-1 || len(ev.Command) < 2 || ev.Command[1] != "pick" {
		t.Fatalf("the pick's audit event: %+v (%v)", ev, err)
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
	p.waitScreen("the key line within 60 columns", func(s string) bool { return strings.Contains(s, "←/→ 1s  [/] 1min") })
	p.settled()
	p.send("q")
	if code := p.exit(30 * time.Second); code != commands.ExitCancelled {
		t.Fatalf("q: exit %d, want %d; screen:\n%s", code, commands.ExitCancelled, p.screen())
	}
	s = p.waitScreen("the cancellation", func(s string) bool {
		return strings.Contains(flat(s), "jsctl consumer reset --interactive: left without applying; nothing changed")
	})
	if strings.Contains(s, "error") || strings.Count(flat(s), "jsctl") != 1 {
		t.Fatalf("leaving is not one plain line:\n%s", s)
	}
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
	p.typeTime(g2)
	p.waitFor("Time: " + g2 + " UTC  (before)")
	p.settled()
	p.send(keyEnter)
	if code := p.exit(30 * time.Second); code != 0 {
		t.Fatalf("seek -i: exit %d", code)
	}
	// before at g2's second is the last message of group 1: Enter prints
	// seek for that message's own time.
	want, err := f.cmd("seek", "ORDERS", nanoText(f.groups[1][2].Time), "--mode", "before").Output()
	if err != nil {
		t.Fatal(err)
	}
	wantText := strings.TrimSpace(string(want))
	p.waitScreen("seek's output", func(s string) bool {
		return strings.Contains(strings.Join(strings.Fields(s), " "), strings.Join(strings.Fields(wantText), " "))
	})

	// No terminal: refused at once, exit 2, naming the command to use.
	for _, c := range []struct {
		args    []string
		instead string
	}{
		{[]string{"pick"}, "jsctl pick needs a terminal; in a script use: jsctl consumer reset STREAM CONSUMER --to-time T"},
		{[]string{"pick", "ORDERS", "audit"}, "jsctl pick needs a terminal; in a script use: jsctl consumer reset ORDERS audit --to-time T"},
		{[]string{"consumer", "reset", "ORDERS", "audit", "-i"}, "jsctl consumer reset --interactive needs a terminal; in a script use: jsctl consumer reset ORDERS audit --to-time T"},
		{[]string{"seek", "ORDERS", "--interactive"}, "jsctl seek --interactive needs a terminal; in a script use: jsctl seek ORDERS TIME"},
	} {
		null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		cmd := f.cmd(c.args...)
		var stderr bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = null, null, &stderr
		err = cmd.Run()
		null.Close()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != commands.ExitUsage || !strings.Contains(stderr.String(), c.instead) {
			t.Fatalf("%v without a terminal: %v, stderr %q; want exit %d and %q", c.args, err, stderr.String(), commands.ExitUsage, c.instead)
		}
		// The command named runs as it is written (with a time for T).
		words := strings.Fields(c.instead[strings.Index(c.instead, "use: ")+len("use: "):])
		if words[len(words)-1] == "TIME" || words[len(words)-1] == "T" {
			words[len(words)-1] = "now"
		}
		if !strings.Contains(c.instead, "STREAM") {
			if out, err := f.cmd(words[1:]...).CombinedOutput(); err != nil {
				t.Fatalf("%v: %v\n%s", words, err, out)
			}
		}
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
