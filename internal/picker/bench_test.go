package picker

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil/seek"
	"github.com/nats-io/nats.go/jetstream"
)

var benchMsgs = flag.Int("picker.benchmsgs", 1_000_000, "messages in BenchmarkCursorMove's stream")

// runUntil runs cmd and the commands the answers lead to, each in its own
// goroutine as bubbletea does, feeding their messages to Update until done
// holds (the spinner's ticks are ignored, not waited for).
func runUntil(m *Model, cmd tea.Cmd, done func() bool) {
	msgs := make(chan tea.Msg, 64)
	start := func(c tea.Cmd) {
		if c != nil {
			go func() { msgs <- c() }()
		}
	}
	start(cmd)
	for !done() {
		switch msg := (<-msgs).(type) {
		case tea.BatchMsg:
			for _, c := range msg {
				start(c)
			}
		case spinMsg, nil:
		default:
			_, next := m.Update(msg)
			start(next)
		}
	}
}

// BenchmarkCursorMove measures a cursor move on a stream of
// -picker.benchmsgs messages (default 1,000,000; building it takes a
// while, once for all sub-benchmarks), from the key to the screen showing
// the cursor's own answer (its message and neighbours):
//
//   - fresh: → (one second on) asks the server (seek with its
//     neighbours) with no debounce;
//
//   - cached: → and ← between two seconds already asked, answered from
//     the cache;
//
//   - debounced: fresh with the default 25ms debounce (the wait after the
//     last key of a burst), which is what a person sees;
//
//   - step: ↓ (the next message), fresh, with the default debounce: the
//     message shows at once from the neighbours, its own neighbours with
//     the answer.
//
//     go test ./internal/picker -run '^$' -bench CursorMove -benchtime 200x
func BenchmarkCursorMove(b *testing.B) {
	s := testserver.Start(b)
	js, err := jetstream.New(testserver.Connect(b, s))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "BENCH", Subjects: []string{"bench.>"}, Storage: jetstream.FileStorage})
	if err != nil {
		b.Fatal(err)
	}
	began := time.Now()
	payload := []byte(`{"order":12345,"amount":"9.99"}`)
	for i := 0; i < *benchMsgs; i++ {
		if _, err := js.PublishAsync(fmt.Sprintf("bench.s%d", i%10), payload); err != nil {
			b.Fatal(err)
		}
		if i%2000 == 1999 || i == *benchMsgs-1 {
			select {
			case <-js.PublishAsyncComplete():
			case <-ctx.Done():
				b.Fatal("publishing did not complete")
			}
		}
	}
	info, err := st.Info(ctx)
	if err != nil || info.State.Msgs != uint64(*benchMsgs) {
		b.Fatalf("stream: %v, %+v", err, info)
	}
	b.Logf("built a stream of %d messages over %s in %s", info.State.Msgs, info.State.LastTime.Sub(info.State.FirstTime).Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	first, last := info.State.FirstTime.Truncate(time.Second), info.State.LastTime.Truncate(time.Second)

	src := &JetStreamSource{JS: js, Now: time.Now}
	m := New(ctx, src, Config{Kind: ForSeek, Stream: "BENCH", Start: first, Mode: seek.After})
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	runUntil(m, m.Init(), m.settled)
	press := func(k tea.KeyPressMsg) {
		_, cmd := m.Update(k)
		runUntil(m, cmd, m.settled)
		if m.curMsg == nil {
			b.Fatalf("no message at %s", m.curTime)
		}
	}
	right, left, down := tea.KeyPressMsg{Code: tea.KeyRight}, tea.KeyPressMsg{Code: tea.KeyLeft}, tea.KeyPressMsg{Code: tea.KeyDown}
	// fresh moves → through the stream, back to its start at the end.
	fresh := func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if !m.curTime.Add(time.Second).Before(last) {
				b.StopTimer()
				runUntil(m, m.setTime(first), m.settled)
				b.StartTimer()
			}
			clear(m.cache)
			press(right)
		}
	}
	b.Run("fresh", func(b *testing.B) { m.cfg.Debounce = time.Nanosecond; fresh(b) })
	b.Run("cached", func(b *testing.B) {
		m.cfg.Debounce = time.Nanosecond
		press(right)
		press(left)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if i%2 == 0 {
				press(right)
			} else {
				press(left)
			}
		}
	})
	b.Run("debounced", func(b *testing.B) { m.cfg.Debounce = 25 * time.Millisecond; fresh(b) })
	b.Run("step", func(b *testing.B) {
		m.cfg.Debounce = 25 * time.Millisecond
		for i := 0; i < b.N; i++ {
			if m.curPos >= info.State.LastSeq {
				b.StopTimer()
				runUntil(m, m.setTime(first), m.settled)
				b.StartTimer()
			}
			clear(m.cache)
			press(down)
		}
	})
}
