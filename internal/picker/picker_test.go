package picker

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"
	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/jsctl/jsctl/jsutil/seek"
)

var base = time.Date(2026, 12, 1, 14, 31, 38, 0, time.UTC)

// fakeSource is a stream in memory: messages at base+0.5s, +1.5s, +2.5s
// (two in that second), +70s and +2h, with seek's rules applied by brute
// force.
type fakeSource struct {
	mu    sync.Mutex
	msgs  []seek.Message
	seeks int
	plans int
}

func newFake() *fakeSource {
	f := &fakeSource{}
	for i, d := range []time.Duration{500 * time.Millisecond, 1500 * time.Millisecond, 2500 * time.Millisecond, 2700 * time.Millisecond, 70 * time.Second, 2 * time.Hour} {
		f.msgs = append(f.msgs, seek.Message{Sequence: uint64(i + 1), Time: base.Add(d), Subject: "orders.eu", Size: 7, Data: []byte(`{"n":1}`)})
	}
	return f
}

func (f *fakeSource) Streams(context.Context) ([]StreamRow, error) {
	return []StreamRow{{Name: "ORDERS", Messages: 6}, {Name: "OTHER"}}, nil
}

func (f *fakeSource) Consumers(context.Context, string) ([]ConsumerRow, error) {
	at := base.Add(1500 * time.Millisecond)
	return []ConsumerRow{{Name: "audit"}, {Name: "billing", Delivered: 2, AckFloor: 2, AckFloorTime: &at}}, nil
}

func (f *fakeSource) Seek(_ context.Context, stream string, t time.Time, mode seek.Mode, subject string) (*seek.Result, error) {
	f.mu.Lock()
	f.seeks++
	f.mu.Unlock()
	r := &seek.Result{Stream: stream, Target: t, Mode: mode, Subject: subject, FirstSeq: 1, LastSeq: 6}
	var pick *seek.Message
	for i := range f.msgs {
		m := &f.msgs[i]
		switch mode {
		case seek.Before:
			if !m.Time.After(t) {
				pick = m
			}
		default:
			if pick == nil && !m.Time.Before(t) {
				pick = m
			}
		}
	}
	r.Message = pick
	switch {
	case pick != nil:
		r.Sequence = pick.Sequence
	case mode == seek.Before:
		r.Sequence = 1
	default:
		r.Sequence = 7
	}
	for _, m := range f.msgs {
		if d := int(m.Sequence) - int(r.Sequence); d >= -2 && d <= 2 {
			r.Neighbours = append(r.Neighbours, m)
		}
	}
	return r, nil
}

func (f *fakeSource) Timeline(context.Context, string, string, int) (*seek.TimelineResult, error) {
	return &seek.TimelineResult{Since: base, Until: base.Add(2 * time.Hour), Total: 6, Buckets: []seek.Bucket{
		{Start: base, End: base.Add(time.Hour), Count: 5}, {Start: base.Add(time.Hour), End: base.Add(2 * time.Hour), Count: 1},
	}}, nil
}

func (f *fakeSource) Plan(_ context.Context, stream, consumer string, t time.Time, mode seek.Mode, show int) (*reset.Plan, error) {
	f.mu.Lock()
	f.plans++
	f.mu.Unlock()
	r, _ := f.Seek(context.Background(), stream, t, mode, "")
	f.mu.Lock()
	f.seeks--
	f.mu.Unlock()
	return &reset.Plan{Stream: stream, Changes: []*reset.Change{{Consumer: consumer, Method: reset.Reset, To: reset.To{Sequence: r.Sequence}, Redeliver: 3}}}, nil
}

func (f *fakeSource) ParseTime(s string) (time.Time, error) {
	t, err := time.Parse("2006-01-02 15:04:05", s)
	if err != nil {
		return time.Time{}, errors.New("bad time")
	}
	return t, nil
}

func (f *fakeSource) seekCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seeks
}

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

func key(m *Model, k string) {
	var msg tea.KeyPressMsg
	switch k {
	case "left":
		msg = tea.KeyPressMsg{Code: tea.KeyLeft}
	case "right":
		msg = tea.KeyPressMsg{Code: tea.KeyRight}
	case "up":
		msg = tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		msg = tea.KeyPressMsg{Code: tea.KeyDown}
	case "pgup":
		msg = tea.KeyPressMsg{Code: tea.KeyPgUp}
	case "pgdown":
		msg = tea.KeyPressMsg{Code: tea.KeyPgDown}
	case "enter":
		msg = tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		msg = tea.KeyPressMsg{Code: tea.KeyEscape}
	default:
		msg = tea.KeyPressMsg{Code: []rune(k)[0], Text: k}
	}
	_, cmd := m.Update(msg)
	drive(m, cmd)
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

// checkScreen asserts the screen fits width×height and holds each want.
func checkScreen(t *testing.T, m *Model, want ...string) string {
	t.Helper()
	s := m.Render()
	lines := strings.Split(s, "\n")
	if len(lines) > m.height {
		t.Fatalf("%d lines on a %d-line screen:\n%s", len(lines), m.height, s)
	}
	for _, l := range lines {
		if n := utf8.RuneCountInString(sgr.ReplaceAllString(l, "")); n > m.width {
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

func TestKeysMoveTheCursor(t *testing.T) {
	f := newFake()
	m := newModel(t, f, Config{Kind: ForReset, Stream: "ORDERS", Consumer: "billing"})
	// The cursor starts at the ack floor's second.
	checkScreen(t, m, "Time: 2026-12-01 14:31:39 UTC  (after)", "Sequence: 2", "Position: delivered 2, ack floor 2", "Plan: redeliver 3, skip 0", "Enter review q quit")
	for _, step := range []struct {
		key, time, seq string
	}{
		{"right", "14:31:40", "Sequence: 3"},
		{"left", "14:31:39", "Sequence: 2"},
		{"]", "14:32:39", "Sequence: 5"},
		{"[", "14:31:39", "Sequence: 2"},
		{"pgdown", "15:31:39", "Sequence: 6"},
		{"pgup", "14:31:39", "Sequence: 2"},
		{"down", "14:31:40", "Sequence: 3"}, // the next message, in the next second
		{"down", "14:32:48", "Sequence: 5"}, // 2.7s is in the same second as 2.5s
		{"up", "14:31:40", "Sequence: 3"},
		{"m", "14:31:40", "Sequence: 4"}, // before: the last at or before 14:31:40 — none after 2.7s... it is 2 (1.5s)
	} {
		if step.key == "m" {
			key(m, "m")
			checkScreen(t, m, "Time: 2026-12-01 14:31:40 UTC  (before)", "Sequence: 2")
			continue
		}
		key(m, step.key)
		checkScreen(t, m, "Time: 2026-12-01 "+step.time+" UTC", step.seq)
	}
	// A cached answer shows at once, without asking again.
	n := f.seekCount()
	key(m, "m")
	key(m, "m") // back to after, asked before
	if f.seekCount() != n+1 {
		t.Fatalf("seeks %d → %d: nearest is new, after is cached", n, f.seekCount())
	}
	// t types a time.
	key(m, "t")
	for _, r := range "2026-12-01 16:31:38" {
		key(m, string(r))
	}
	key(m, "enter")
	checkScreen(t, m, "Time: 2026-12-01 16:31:38 UTC", "Sequence: 6")
	key(m, "t")
	key(m, "x")
	key(m, "enter")
	checkScreen(t, m, "error: bad time")
	key(m, "esc")
	// Enter reviews; y finishes with the plan.
	key(m, "enter")
	checkScreen(t, m, "Apply this change?")
	key(m, "y")
	out := m.Outcome()
	if !out.Done || out.Plan == nil || out.Plan.Changes[0].To.Sequence != 6 || out.Consumer != "billing" {
		t.Fatalf("outcome %+v", out)
	}
}

func TestDebounceAndSpinner(t *testing.T) {
	f := newFake()
	m := newModel(t, f, Config{Kind: ForSeek, Stream: "ORDERS", Start: base})
	checkScreen(t, m, "Sequence: 1")
	// Three quick moves: the cursor follows at once, the last answer
	// stays with a spinner, and only the last position is asked for.
	n := f.seekCount()
	var last tea.Cmd
	for range 3 {
		_, last = m.Update(tea.KeyPressMsg{Code: tea.KeyRight})
	}
	checkScreen(t, m, "Time: 2026-12-01 14:31:41 UTC", "looking up", "Sequence: 1")
	drive(m, last)
	if got := f.seekCount() - n; got != 1 {
		t.Fatalf("three debounced moves asked %d times, want 1", got)
	}
	checkScreen(t, m, "Sequence: 5")
	if strings.Contains(m.Render(), "looking up") {
		t.Fatal("the spinner stays after the answer")
	}
	key(m, "enter")
	if out := m.Outcome(); !out.Done || !out.Time.Equal(base.Add(3*time.Second)) || out.Mode != seek.After {
		t.Fatalf("seek -i outcome %+v", out)
	}
}

func TestChooseAndLeave(t *testing.T) {
	f := newFake()
	m := newModel(t, f, Config{Kind: ForReset, Color: true})
	checkScreen(t, m, "ORDERS", "OTHER")
	key(m, "o")
	key(m, "r")
	key(m, "d")
	if s := m.Render(); strings.Contains(s, "OTHER") {
		t.Fatalf("the filter keeps OTHER:\n%s", s)
	}
	key(m, "enter")
	checkScreen(t, m, "audit", "billing")
	key(m, "down")
	key(m, "enter")
	checkScreen(t, m, "Consumer: billing", "Sequence: 2")
	if !strings.Contains(m.Render(), "\x1b[") {
		t.Fatal("no colour with Color set")
	}
	key(m, "q")
	if out := m.Outcome(); out.Done {
		t.Fatalf("q finished: %+v", out)
	}
}

func TestNoColorAndResize(t *testing.T) {
	m := newModel(t, newFake(), Config{Kind: ForReset, Stream: "ORDERS", Consumer: "billing"})
	if s := m.Render(); strings.Contains(s, "\x1b[") {
		t.Fatalf("escape sequences without Color:\n%q", s)
	}
	m.Update(tea.WindowSizeMsg{Width: 50, Height: 14})
	checkScreen(t, m, "Time: 2026-12-01 14:31:39 UTC")
	if s := m.Render(); !strings.Contains(s, "←/→ 1s [/] 1min") {
		t.Fatalf("the key line is cut off at 50×14:\n%s", s)
	}
}

func TestFilterKey(t *testing.T) {
	f := newFake()
	m := newModel(t, f, Config{Kind: ForSeek, Stream: "ORDERS", Start: base})
	key(m, "f")
	checkScreen(t, m, "Subject filter:")
	for _, r := range "orders.eu" {
		key(m, string(r))
	}
	key(m, "enter")
	checkScreen(t, m, "Filter: orders.eu", "Sequence: 1")
	if m.shownAt.subject != "orders.eu" {
		t.Fatalf("the answer shown is for subject %q", m.shownAt.subject)
	}
}
