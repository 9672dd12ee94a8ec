package picker

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/jsctl/jsctl/jsutil/seek"
)

// drive runs cmd and every command the answers lead to, feeding their
// messages to Update (the spinner's ticks are dropped).
func drive(m *Model, cmd tea.Cmd) {
	queue := []tea.Cmd{cmd}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if c == nil {
			continue
		}
		switch msg := c().(type) {
		case tea.BatchMsg:
			queue = append(queue, msg...)
		case spinMsg, nil:
		default:
			_, next := m.Update(msg)
			queue = append(queue, next)
		}
	}
}

func keyMsg(k string) tea.KeyPressMsg {
	switch k {
	case "left":
		return tea.KeyPressMsg{Code: tea.KeyLeft}
	case "right":
		return tea.KeyPressMsg{Code: tea.KeyRight}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "pgup":
		return tea.KeyPressMsg{Code: tea.KeyPgUp}
	case "pgdown":
		return tea.KeyPressMsg{Code: tea.KeyPgDown}
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	}
	return tea.KeyPressMsg{Code: []rune(k)[0], Text: k}
}

func key(m *Model, k string) {
	_, cmd := m.Update(keyMsg(k))
	drive(m, cmd)
}

// typeText types s (t or f first opens the line) and presses Enter.
func typeText(m *Model, s string) {
	for _, r := range s {
		key(m, string(r))
	}
	key(m, "enter")
}

func newModel(t *testing.T, f *fakeSource, cfg Config) *Model {
	t.Helper()
	cfg.Debounce = time.Nanosecond
	m := New(context.Background(), f, cfg)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	drive(m, m.Init())
	return m
}

var sgr = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// checkScreen asserts the screen fits width×height, each line made to fit
// (none left for Render's guard to cut), and holds each want.
func checkScreen(t *testing.T, m *Model, want ...string) string {
	t.Helper()
	var drawn []string
	switch m.screen {
	case screenStreams, screenConsumers:
		drawn = m.listView()
	case screenReview:
		drawn = m.reviewView()
	default:
		drawn = m.pickView()
	}
	for _, l := range drawn {
		if n := width(l); n > m.width {
			t.Fatalf("a line of %d columns drawn on a %d-column screen: %q", n, m.width, l)
		}
	}
	s := m.Render()
	lines := strings.Split(s, "\n")
	if len(lines) > m.height {
		t.Fatalf("%d lines on a %d-line screen:\n%s", len(lines), m.height, s)
	}
	for _, l := range lines {
		if n := width(l); n > m.width {
			t.Fatalf("a line of %d columns on a %d-column screen: %q", n, m.width, l)
		}
	}
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Fatalf("the screen lacks %q:\n%s", w, s)
		}
	}
	return s
}

var seqRe = regexp.MustCompile(`(?m)^Sequence: (\d+)$`)

func shownSeq(t *testing.T, m *Model) string {
	t.Helper()
	g := seqRe.FindStringSubmatch(m.Render())
	if g == nil {
		t.Fatalf("no Sequence on screen:\n%s", m.Render())
	}
	return g[1]
}

// within lists the fake's sequences on subjects, in order.
func within(f *fakeSource, subjects ...string) []string {
	var out []string
	for _, m := range f.msgs {
		if matches(subjects, m.Subject) {
			out = append(out, fmt.Sprint(m.Sequence))
		}
	}
	return out
}

// TestStepsEveryMessage: ↓ and ↑ step exactly one message within the
// filter, through a burst of five in one second, and the time shown is
// the message's own.
func TestStepsEveryMessage(t *testing.T) {
	for _, filter := range []string{"", "orders.eu"} {
		f := newFake()
		m := newModel(t, f, Config{Kind: ForReset, Stream: "ORDERS", Consumer: "audit", Preview: filter})
		all := within(f, subjectsOf(filter)...)
		// audit has acknowledged nothing: it opens on the first message.
		if got := shownSeq(t, m); got != all[0] {
			t.Fatalf("filter %q: opens at %s, want %s", filter, got, all[0])
		}
		for i := 1; i < len(all); i++ {
			key(m, "down")
			if got := shownSeq(t, m); got != all[i] {
				t.Fatalf("filter %q: ↓ %d shows %s, want %s", filter, i, got, all[i])
			}
			msg := f.msgs[m.curPos-1]
			checkScreen(t, m, "Time: "+m.timeText(msg.Time)+"  (after)")
		}
		key(m, "down")
		checkScreen(t, m, "Sequence: "+all[len(all)-1], "no later message within the filter")
		for i := len(all) - 2; i >= 0; i-- {
			key(m, "up")
			if got := shownSeq(t, m); got != all[i] {
				t.Fatalf("filter %q: ↑ to %d shows %s, want %s", filter, i, got, all[i])
			}
		}
		// Quick keys, faster than the answers: each still one message.
		var cmds []tea.Cmd
		for range 6 {
			_, c := m.Update(keyMsg("down"))
			cmds = append(cmds, c)
		}
		drive(m, tea.Batch(cmds...))
		want := all[min(6, len(all)-1)]
		if got := shownSeq(t, m); got != want || !m.settled() {
			t.Fatalf("filter %q: six quick ↓ show %s (settled %v), want %s", filter, got, m.settled(), want)
		}
	}
}

// TestTimeKeys: ←/→ and the rest move the time to a whole second and
// select by the mode; a typed time keeps its fraction; m switches mode.
func TestTimeKeys(t *testing.T) {
	f := newFake()
	m := newModel(t, f, Config{Kind: ForSeek, Stream: "ORDERS", Start: base.Add(2 * time.Second)})
	checkScreen(t, m, "Time: 2026-12-01 14:31:40 UTC  (after)", "Sequence: 3")
	for _, step := range []struct{ key, time, seq string }{
		{"right", "14:31:41", "8"},
		{"left", "14:31:40", "3"},
		{"]", "14:32:40", "8"},
		{"[", "14:31:40", "3"},
		{"pgdown", "15:31:40", "9"},
		{"pgup", "14:31:40", "3"},
	} {
		key(m, step.key)
		checkScreen(t, m, "Time: 2026-12-01 "+step.time+" UTC  (after)", "Sequence: "+step.seq)
	}
	// A typed time keeps its fraction: 2.6s is nearest 2.5s (5) and 2.7s
	// (6); 2.61s is nearer 2.7s.
	key(m, "m")
	key(m, "m")
	checkScreen(t, m, "(nearest)")
	key(m, "t")
	typeText(m, "2026-12-01 14:31:40.61")
	checkScreen(t, m, "Time: 2026-12-01 14:31:40.61 UTC  (nearest)", "Sequence: 6")
	key(m, "t")
	typeText(m, "2026-12-01 14:31:40.59")
	checkScreen(t, m, "Time: 2026-12-01 14:31:40.59 UTC  (nearest)", "Sequence: 5")
	// → from a fraction goes to the next whole second.
	key(m, "right")
	checkScreen(t, m, "Time: 2026-12-01 14:31:41 UTC  (nearest)", "Sequence: 7")
	// A cached answer shows at once, without asking again.
	n := f.seekCount()
	key(m, "[")
	key(m, "]")
	if f.seekCount() != n+1 {
		t.Fatalf("seeks %d → %d: [ is new, ] is cached", n, f.seekCount())
	}
	key(m, "t")
	typeText(m, "x")
	checkScreen(t, m, "error: bad time")
	key(m, "esc")
	// Enter: the outcome is the message's own time, exactly.
	key(m, "down")
	key(m, "enter")
	if out := m.Outcome(); !out.Done || !out.Time.Equal(f.msgs[7].Time) || out.Mode != seek.Nearest {
		t.Fatalf("seek -i outcome %+v, want the time of message 8", out)
	}
}

// TestOpensOnTheConsumersNextMessage: the first cursor is the consumer's
// next message within its filters; a caught-up consumer opens past the
// last; seek -i opens on the last message.
func TestOpensOnTheConsumersNextMessage(t *testing.T) {
	for _, c := range []struct {
		consumer, seq, plan string
	}{
		{"billing", "3", "Plan: first delivery 3"},
		{"us", "2", "Plan: first delivery 2"},
		{"caught", "10", "Plan: first delivery 10"},
	} {
		m := newModel(t, newFake(), Config{Kind: ForReset, Stream: "ORDERS", Consumer: c.consumer})
		checkScreen(t, m, "Sequence: "+c.seq, c.plan)
	}
	m := newModel(t, newFake(), Config{Kind: ForReset, Stream: "ORDERS", Consumer: "caught"})
	checkScreen(t, m, "From here caught's first delivery is the next message stored (sequence 10).", "none from here on")
	m = newModel(t, newFake(), Config{Kind: ForSeek, Stream: "ORDERS"})
	checkScreen(t, m, "Sequence: 9", "Time: 2026-12-01 16:31:38 UTC")
	m = newModel(t, newFake(), Config{Kind: ForSeek, Stream: "ORDERS", Preview: "orders.eu"})
	checkScreen(t, m, "Sequence: 8", "Subject filter: orders.eu")
}

// TestPreviewOutsideTheConsumersFilter: a message the consumer does not
// receive is shown as such; the plan, the review and the outcome are the
// first message it does receive.
func TestPreviewOutsideTheConsumersFilter(t *testing.T) {
	f := newFake()
	m := newModel(t, f, Config{Kind: ForReset, Stream: "ORDERS", Consumer: "us"})
	checkScreen(t, m, "Consumer filter: orders.us", "Preview filter: none", "Sequence: 2")
	key(m, "f")
	typeText(m, "orders.eu")
	key(m, "t")
	typeText(m, "2026-12-01 14:31:40")
	s := checkScreen(t, m, "Preview filter: orders.eu", "Sequence: 3", "Plan: first delivery 4")
	if !strings.Contains(flatten(s), "us does not receive message 3: orders.eu is outside its filter orders.us. From here its first delivery is message 4 (orders.us,") {
		t.Fatalf("the screen does not say that us does not receive 3:\n%s", s)
	}
	key(m, "enter")
	s = checkScreen(t, m, "Apply this change?")
	if fl := flatten(s); !strings.Contains(fl, "Review: reset us so that its first delivery is message 4 (orders.us,") || !strings.Contains(fl, "The message shown, 3 (orders.eu), is outside its filter orders.us") {
		t.Fatalf("the review does not name the first delivery:\n%s", s)
	}
	key(m, "y")
	if out := m.Outcome(); !out.Done || out.Plan == nil || out.Plan.Target.Seq != 4 || out.Plan.Changes[0].To.Sequence != 4 {
		t.Fatalf("outcome %+v, want a reset to 4", out)
	}
	// Clearing the preview filter goes back to the consumer's own.
	m = newModel(t, f, Config{Kind: ForReset, Stream: "ORDERS", Consumer: "us", Preview: "orders.eu"})
	key(m, "f")
	for range len("orders.eu") {
		key(m, "backspace")
	}
	key(m, "enter")
	checkScreen(t, m, "Preview filter: none", "Sequence: 2")
	if strings.Contains(m.Render(), "does not receive") {
		t.Fatalf("a message of the consumer's own filter is said not to be received:\n%s", m.Render())
	}
	// An invalid preview filter is refused, not shown as set.
	key(m, "f")
	typeText(m, "orders..eu")
	checkScreen(t, m, "error:", "Preview filter: orders..eu▏")
	key(m, "esc")
	checkScreen(t, m, "Preview filter: none")
}

// flatten joins the screen's lines (wrapped text) with spaces.
func flatten(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		out = append(out, strings.TrimSpace(l))
	}
	return strings.Join(strings.Fields(strings.Join(out, " ")), " ")
}

// TestSeveralFilters: within a consumer's several filter subjects the
// answers are seek's, by brute force, for every time, mode and number of
// neighbours.
func TestSeveralFilters(t *testing.T) {
	f := newFake()
	msgs := append([]seek.Message(nil), f.msgs...)
	for i := range msgs {
		if i%3 == 2 {
			msgs[i].Subject = "orders.jp"
		}
	}
	o := bruteOne{msgs}
	sets := [][]string{{"orders.eu", "orders.jp"}, {"orders.us", "orders.jp"}, {"orders.*", "orders.eu"}, {"orders.jp", "none"}}
	seqs := func(r *seek.Result) string {
		s := fmt.Sprintf("seq %d msg", r.Sequence)
		if r.Message != nil {
			s += fmt.Sprint(r.Message.Sequence)
		}
		for _, n := range r.Neighbours {
			s += fmt.Sprintf(" %d", n.Sequence)
		}
		return s
	}
	for _, set := range sets {
		for around := 0; around <= 3; around++ {
			for d := -time.Second; d < 3*time.Hour; d += 100 * time.Millisecond {
				if d > 3*time.Second && d%time.Minute != 0 {
					continue
				}
				at := base.Add(d)
				for _, mode := range []seek.Mode{seek.After, seek.Before, seek.Nearest} {
					got, _ := seekAny(context.Background(), o, at, mode, set, around)
					if want := bruteSeek(msgs, at, mode, set, around); seqs(got) != seqs(want) {
						t.Fatalf("%v %s at %s around %d: %s, want %s", set, mode, d, around, seqs(got), seqs(want))
					}
				}
			}
			for seq := uint64(0); seq <= 11; seq++ {
				got, _ := atAny(context.Background(), o, seq, set, around)
				if want := bruteAt(msgs, seq, set, around); seqs(got) != seqs(want) {
					t.Fatalf("%v at %d around %d: %s, want %s", set, seq, around, seqs(got), seqs(want))
				}
			}
		}
	}
}

// TestNotices: a notice shows on the status line and is gone once the
// server answers; a failed lookup shows its reason.
func TestNotices(t *testing.T) {
	f := newFake()
	m := newModel(t, f, Config{Kind: ForSeek, Stream: "ORDERS"})
	m.Update(Notice{Text: "no answer from the server; asking again for up to 29s (Ctrl-C to stop)"})
	checkScreen(t, m, "asking again for up to 29s")
	key(m, "left")
	if strings.Contains(m.Render(), "asking again") {
		t.Fatalf("the notice stays after the server answered:\n%s", m.Render())
	}
	m.Update(Notice{Text: "warning: record of \u202eevil\x1b[2J"})
	if s := checkScreen(t, m, `record of \u202eevil\u001b[2J`); strings.ContainsAny(s, "\u202e\x1b") {
		t.Fatalf("a notice reaches the terminal unescaped:\n%q", s)
	}
	f.mu.Lock()
	f.fail = errors.New("seek stream \"ORDERS\": permission denied (publish to \"$JS.API.STREAM.MSG.GET.ORDERS\") \u202e")
	f.mu.Unlock()
	key(m, "left")
	if s := checkScreen(t, m, "error: seek stream", "permission denied", `\u202e`); strings.Contains(s, "\u202e") {
		t.Fatalf("an error reaches the terminal unescaped:\n%q", s)
	}
	if strings.Contains(m.Render(), "looking up") {
		t.Fatalf("a failed lookup still spins:\n%s", m.Render())
	}
}

// TestChooseAndLeave: the lists filter by typing, hide the buckets'
// streams unless asked, escape names and keep their columns aligned.
func TestChooseAndLeave(t *testing.T) {
	f := newFake()
	long := "A_STREAM_WITH_A_VERY_LONG_NAME_THAT_GOES_ON_AND_ON"
	f.streams = append(f.streams, StreamRow{Name: long, Messages: 12345678, First: base, Last: base}, StreamRow{Name: "E\u202eX\x1b[2J"})
	f.consumers = append(f.consumers, ConsumerRow{Name: "E\x1b[2J"})
	m := newModel(t, f, Config{Kind: ForReset, Color: true})
	s := checkScreen(t, m, "ORDERS", "OTHER", "2 streams of KV buckets and object stores hidden", `E\u202eX\u001b[2J`)
	if strings.Contains(s, "KV_JSCTL") || strings.Contains(s, "OBJ_files") || strings.Contains(s, "\u202e") {
		t.Fatalf("bucket streams or raw names listed:\n%s", s)
	}
	// Columns align: every row's MESSAGES column ends where the header's does.
	lines := strings.Split(sgr.ReplaceAllString(s, ""), "\n")
	var end int
	for _, l := range lines {
		if i := strings.Index(l, "MESSAGES"); i >= 0 {
			end = width(l[:i]) + len("MESSAGES")
		}
	}
	for _, l := range lines {
		if strings.Contains(l, "12345678") && width(l[:strings.Index(l, "12345678")])+8 != end {
			t.Fatalf("the long name pushes the columns:\n%s", s)
		}
	}
	if !strings.Contains(s, "…") {
		t.Fatalf("the long name is not cut with an ellipsis:\n%s", s)
	}
	m = newModel(t, f, Config{Kind: ForReset, AllStreams: true})
	checkScreen(t, m, "KV_JSCTL_HISTORY", "OBJ_files")
	m = newModel(t, f, Config{Kind: ForReset, Color: true})
	for _, r := range "ord" {
		key(m, string(r))
	}
	if s := m.Render(); strings.Contains(s, "OTHER") {
		t.Fatalf("the filter keeps OTHER:\n%s", s)
	}
	key(m, "enter")
	s = checkScreen(t, m, "audit", "billing", "CONSUMER", "DELIVERED", "ACK FLOOR", "PENDING", "PAUSED", "FILTER", "orders.us", `E\u001b[2J`)
	if strings.Contains(s, "PENDING PAUSED") {
		t.Fatalf("the consumer list's headers run together:\n%s", s)
	}
	key(m, "down")
	key(m, "enter")
	checkScreen(t, m, "Consumer: billing", "Sequence: 3")
	if !strings.Contains(m.Render(), "\x1b[") {
		t.Fatal("no colour with Color set")
	}
	key(m, "q")
	if out := m.Outcome(); out.Done {
		t.Fatalf("q finished: %+v", out)
	}
}

// TestScreenFits: every screen fits 80×24 with no line cut (prose
// wrapped at spaces), and a larger terminal uses its space.
func TestScreenFits(t *testing.T) {
	f := newFake()
	f.consumers = append(f.consumers, ConsumerRow{Name: "a-consumer-with-a-rather-long-name", Filters: []string{"orders.us"}})
	render := func(plan *reset.Plan, w int) string {
		return "Stream ORDERS, target sequence 4:\n" + strings.Repeat("a-wide-column-value ", 9) + "\n  a note that goes on and on about what the change does and why it does it, longer than any line"
	}
	small := newModel(t, f, Config{Kind: ForReset, Stream: "ORDERS", Consumer: "a-consumer-with-a-rather-long-name", Preview: "orders.eu", RenderPlan: render})
	key(small, "t")
	typeText(small, "2026-12-01 14:31:40")
	s := checkScreen(t, small, "Sequence: 3")
	if !strings.Contains(flatten(s), "From here its first delivery is message 4") {
		t.Fatalf("the note on what the consumer receives is cut:\n%s", s)
	}
	key(small, "enter")
	var seen []string
	for range 20 {
		seen = append(seen, checkScreen(t, small, "Apply this change?"))
		key(small, "down")
	}
	all := flatten(strings.Join(seen, "\n"))
	if strings.Count(all, "a-wide-column-value") < 9 || !strings.Contains(all, "longer than any line") {
		t.Fatalf("the review loses text at 80×24:\n%s", strings.Join(seen, "\n----\n"))
	}
	big := newModel(t, f, Config{Kind: ForReset, Stream: "ORDERS", Consumer: "billing"})
	big.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	key(big, "t")
	typeText(big, "2026-12-01 14:31:40")
	s = checkScreen(t, big, "Sequence: 3")
	if n := strings.Count(s, "orders."); n < 9 {
		t.Fatalf("at 160×48 the screen shows %d subjects, want every neighbour:\n%s", n, s)
	}
	if big.buckets() <= small.buckets() || big.around() <= small.around() {
		t.Fatalf("a larger terminal has %d buckets and %d neighbours, as a small one", big.buckets(), big.around())
	}
}

func TestWrap(t *testing.T) {
	for _, c := range []struct {
		in   string
		w    int
		want []string
	}{
		{"none selected by this time; a consumer reset here starts at the sequence above", 40,
			[]string{"none selected by this time; a consumer", "  reset here starts at the sequence", "  above"}},
		{"short", 40, []string{"short"}},
		{"abcdefghij", 4, []string{"abcd", "  ef", "  gh", "  ij"}},
	} {
		got := wrap(c.in, c.w, "  ")
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Fatalf("wrap(%q, %d) = %q, want %q", c.in, c.w, got, c.want)
		}
	}
	if got := flow([]string{"←/→ 1s", "[/] 1min", "PgUp/PgDn 1h"}, 18); strings.Join(got, "|") != "←/→ 1s  [/] 1min|PgUp/PgDn 1h" {
		t.Fatalf("flow: %q", got)
	}
}
