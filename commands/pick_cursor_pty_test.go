//go:build linux

package commands_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go/jetstream"
)

// burstFixture is ORDERS with a group of two, a burst of five messages
// within one second, and a group of two.
func burstFixture(t *testing.T) *pickFixture {
	t.Helper()
	s := testserver.Start(t)
	return buildPickFixture(t, s.ClientURL(), testserver.Connect(t, s), 2, 5, 2)
}

// waitSeq waits until the screen has settled on sequence want.
func (p *vtProc) waitSeq(what string, want uint64) string {
	p.t.Helper()
	deadline := time.Now().Add(testserver.MinWait)
	for {
		_, _, seq, s := p.settledScreen()
		if seq == want {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s: the screen shows Sequence %d, want %d:\n%s", what, seq, want, s)
		}
	}
}

// TestPickStepsThroughABurst: ↑/↓ step exactly one message, through five
// stored within one second, each Sequence and Time those of the message
// by brute force; within a preview filter, only its messages. The 3rd of
// the burst is t, its second, Enter, ↓, ↓.
func TestPickStepsThroughABurst(t *testing.T) {
	t.Parallel() // mostly waits (on processes, servers, timers): runs beside the others
	f := burstFixture(t)
	all := f.all()
	p := startVT(t, f.cmd("pick", "ORDERS", "audit"), 100, 30)
	// audit has acknowledged nothing: it opens on the first message.
	p.waitSeq("the opening", all[0].Sequence)
	for i := 1; i < len(all); i++ {
		p.send(keyDown)
		s := p.waitSeq(fmt.Sprintf("↓ number %d", i), all[i].Sequence)
		if !strings.Contains(s, "Time: "+nanoText(all[i].Time)+" UTC") {
			t.Fatalf("↓ to %d: the time shown is not the message's own (%s):\n%s", all[i].Sequence, nanoText(all[i].Time), s)
		}
	}
	p.send(keyDown)
	p.waitFor("no later message within the filter")
	for i := len(all) - 2; i >= 0; i-- {
		p.send(keyUp)
		p.waitSeq(fmt.Sprintf("↑ to %d", all[i].Sequence), all[i].Sequence)
	}
	// The 3rd message of the burst: t, its second, Enter, ↓, ↓.
	burst := f.groups[1]
	p.typeTime(humanSecond(burst[0].Time))
	p.waitSeq("the burst's second", burst[0].Sequence)
	p.send(keyDown)
	p.waitSeq("↓ in the burst", burst[1].Sequence)
	p.send(keyDown)
	p.waitSeq("↓ ↓ in the burst", burst[2].Sequence)

	// Within the preview filter orders.us, ↑ from the end steps through
	// its messages only.
	var us []jetstream.RawStreamMsg
	for _, m := range all {
		if m.Subject == "orders.us" {
			us = append(us, m)
		}
	}
	last := all[len(all)-1]
	p.typeTime(nanoText(last.Time))
	p.waitSeq("the last message", last.Sequence)
	p.send("f")
	p.waitFor("Preview filter: ▏")
	p.send("orders.us" + keyEnter)
	p.waitFor("Preview filter: orders.us")
	// After mode at the last message's time, within orders.us: the first
	// orders.us message from then on, else the position past the end.
	from, want := len(us), last.Sequence+1
	for i, m := range us {
		if !m.Time.Before(last.Time) {
			from, want = i, m.Sequence
			break
		}
	}
	p.waitSeq("orders.us from the last message's time", want)
	for i := from - 1; i >= 0; i-- {
		p.send(keyUp)
		s := p.waitSeq(fmt.Sprintf("↑ to orders.us %d", us[i].Sequence), us[i].Sequence)
		if !strings.Contains(s, "Subject:  orders.us") {
			t.Fatalf("↑ within orders.us shows another subject:\n%s", s)
		}
	}
	p.send(keyUp)
	p.waitFor("no earlier message within the filter")
	p.send("q")
	p.exit(30 * time.Second)
}

// TestPickSubSecondTimes: a typed time keeps its fraction, and the
// message shown is the one jsctl seek finds for it, in every mode; seek -i
// then prints what seek prints for that message's own time.
func TestPickSubSecondTimes(t *testing.T) {
	t.Parallel() // mostly waits (on processes, servers, timers): runs beside the others
	f := burstFixture(t)
	burst := f.groups[1]
	p := startVT(t, f.cmd("seek", "ORDERS", "-i"), 100, 30)
	p.settled()
	modes := []string{"after", "before", "nearest"}
	for mi, mode := range modes {
		if mi > 0 {
			p.send("m")
			p.waitFor("(" + mode + ")")
		}
		for i := 0; i+1 < len(burst); i++ {
			gap := burst[i+1].Time.Sub(burst[i].Time)
			for _, at := range []time.Time{burst[i].Time.Add(gap / 3), burst[i].Time.Add(2 * gap / 3), burst[i].Time.Add(gap / 2)} {
				text := nanoText(at)
				p.typeTime(text)
				p.waitFor("Time: " + text + " UTC  (" + mode + ")")
				shown, m, seq, s := p.settledScreen()
				if shown != text || m != mode {
					t.Fatalf("typed %s (%s): shows %s (%s):\n%s", text, mode, shown, m, s)
				}
				if want := f.seekSequence(text, "--mode", mode); seq != want {
					t.Fatalf("typed %s (%s): Sequence %d, jsctl seek says %d:\n%s", text, mode, seq, want, s)
				}
			}
		}
	}
	// nearest, between the 2nd and 3rd of the burst, nearer the 3rd.
	at := burst[1].Time.Add(2 * burst[2].Time.Sub(burst[1].Time) / 3)
	p.typeTime(nanoText(at))
	p.waitSeq("nearest the 3rd", burst[2].Sequence)
	p.send(keyEnter)
	if code := p.exit(30 * time.Second); code != 0 {
		t.Fatalf("seek -i: exit %d", code)
	}
	want, err := f.cmd("seek", "ORDERS", nanoText(burst[2].Time), "--mode", "nearest").Output()
	if err != nil {
		t.Fatal(err)
	}
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	p.waitScreen("seek's output for the message's own time", func(s string) bool { return strings.Contains(norm(s), norm(string(want))) })
}

// TestPickPreviewFilterApply: with a preview filter the message shown is
// the target; when the consumer does not receive it, the screen and the
// review say so and name the message it will receive, and after y its
// first delivery (a plain nats.go client) is that message.
func TestPickPreviewFilterApply(t *testing.T) {
	t.Parallel() // mostly waits (on processes, servers, timers): runs beside the others
	f := burstFixture(t)
	ctx := testserver.Context(t, time.Minute)
	if _, err := f.js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "us", FilterSubject: "orders.us", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	all := f.all()
	// The first orders.us message after an orders.eu one of the burst.
	burst := f.groups[1]
	eu := burst[2]
	var firstUS uint64
	for _, m := range all {
		if m.Sequence > eu.Sequence && m.Subject == "orders.us" {
			firstUS = m.Sequence
			break
		}
	}
	if eu.Subject != "orders.eu" || firstUS == 0 {
		t.Fatalf("fixture: %d is on %s, the next orders.us is %d", eu.Sequence, eu.Subject, firstUS)
	}

	p := startVT(t, f.cmd("pick", "ORDERS", "us", "--subject", "orders.eu"), 100, 30)
	p.waitFor("Consumer filter: orders.us")
	p.waitFor("Preview filter: orders.eu")
	p.typeTime(nanoText(eu.Time))
	s := p.waitSeq("the orders.eu message", eu.Sequence)
	s = p.waitScreen("the plan", func(s string) bool {
		return strings.Contains(s, "Plan: first delivery "+strconv.FormatUint(firstUS, 10))
	})
	if !strings.Contains(words(s), fmt.Sprintf("us does not receive message %d: orders.eu is outside its filter orders.us. From here its first delivery is message %d (orders.us,", eu.Sequence, firstUS)) {
		t.Fatalf("the screen does not say that us does not receive %d:\n%s", eu.Sequence, s)
	}
	p.send(keyEnter)
	s = p.waitFor("Apply this change?")
	if !strings.Contains(words(s), fmt.Sprintf("Review: reset us so that its first delivery is message %d (orders.us,", firstUS)) ||
		!strings.Contains(words(s), fmt.Sprintf("The message shown, %d (orders.eu), is outside its filter orders.us", eu.Sequence)) {
		t.Fatalf("the review does not name the first delivery:\n%s", s)
	}
	p.send("y")
	if code := p.exit(30 * time.Second); code != 0 {
		t.Fatalf("apply: exit %d; screen:\n%s", code, p.screen())
	}
	if got := f.next("us"); got != firstUS {
		t.Fatalf("us delivers %d first, want %d (the screen named it)", got, firstUS)
	}

	// A preview filter the consumer receives: the message shown is the
	// first delivery.
	us := burst[3]
	p = startVT(t, f.cmd("pick", "ORDERS", "audit"), 100, 30)
	p.settled()
	p.send("f")
	p.waitFor("Preview filter: ▏")
	p.send("orders.us" + keyEnter)
	p.waitFor("Preview filter: orders.us")
	p.typeTime(nanoText(burst[2].Time))
	s = p.waitSeq("the next orders.us message", us.Sequence)
	if strings.Contains(s, "does not receive") {
		t.Fatalf("audit receives every subject:\n%s", s)
	}
	p.waitFor(fmt.Sprintf("Plan: first delivery %d,", us.Sequence))
	p.send(keyEnter)
	p.waitFor("Apply this change?")
	p.send("y")
	if code := p.exit(30 * time.Second); code != 0 {
		t.Fatalf("apply: exit %d; screen:\n%s", code, p.screen())
	}
	if got := f.next("audit"); got != us.Sequence {
		t.Fatalf("audit delivers %d first, want %d (the message shown)", got, us.Sequence)
	}
}

// reviewText opens the review of billing's reset to the fixture's second
// group on a cols×rows terminal and returns everything it shows,
// scrolling to its end.
func reviewText(t *testing.T, f *pickFixture, cols, rows int) string {
	t.Helper()
	p := startVT(t, f.cmd("pick", "ORDERS", "billing"), cols, rows)
	p.settled()
	p.typeTime(humanSecond(f.groups[1][0].Time))
	p.waitSeq("the review's target", f.groups[1][0].Sequence)
	p.waitFor("Plan: first delivery")
	p.send(keyEnter)
	var seen []string
	scroll := regexp.MustCompile(`scroll: lines (\d+)–(\d+) of (\d+)`)
	prev := ""
	for {
		s := p.waitScreen("the review", func(s string) bool { return strings.Contains(s, "Apply this change?") && s != prev })
		for _, l := range strings.Split(s, "\n") {
			if w := len([]rune(strings.TrimRight(l, " "))); w > cols {
				t.Fatalf("a line of %d columns at %d×%d: %q", w, cols, rows, l)
			}
		}
		seen = append(seen, s)
		m := scroll.FindStringSubmatch(s)
		if m == nil || m[2] == m[3] {
			break
		}
		prev = s
		p.send(keyDown)
	}
	p.send("q")
	p.exit(30 * time.Second)
	return strings.Join(seen, "\n")
}

// TestPickReviewColumns: at 80×24 the review shows every column and word
// the 160×48 review shows (fitted, wrapped and scrolled, nothing cut).
func TestPickReviewColumns(t *testing.T) {
	t.Parallel() // mostly waits (on processes, servers, timers): runs beside the others
	f := newPickFixture(t)
	small, big := reviewText(t, f, 80, 24), reviewText(t, f, 160, 48)
	for _, col := range []string{"CONSUMER", "METHOD", "DELIVERED", "ACK FLOOR", "TO TIME", "REDELIVER", "SKIP", "ACK RECORDS", "STATUS"} {
		if !strings.Contains(big, col) || !strings.Contains(small, col) {
			t.Fatalf("column %s: in the 160×48 review %v, in the 80×24 one %v\n160×48:\n%s\n80×24:\n%s", col, strings.Contains(big, col), strings.Contains(small, col), big, small)
		}
	}
	words := map[string]bool{}
	for _, w := range strings.Fields(small) {
		words[w] = true
	}
	for _, w := range strings.Fields(big) {
		if !words[w] {
			t.Fatalf("%q is in the 160×48 review, not in the 80×24 one\n160×48:\n%s\n80×24:\n%s", w, big, small)
		}
	}
}

// TestPickHiddenBuckets: the streams of KV buckets and object stores are
// left out of the stream list, and said to be; --all lists them.
func TestPickHiddenBuckets(t *testing.T) {
	t.Parallel() // mostly waits (on processes, servers, timers): runs beside the others
	f := newPickFixture(t)
	ctx := testserver.Context(t, time.Minute)
	if _, err := f.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "JSCTL_SOMETHING"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "files"}); err != nil {
		t.Fatal(err)
	}
	p := startVT(t, f.cmd("pick"), 100, 30)
	s := p.waitFor("2 streams of KV buckets and object stores hidden (--all lists them)")
	if !strings.Contains(s, "ORDERS") || !strings.Contains(s, "OTHER") || strings.Contains(s, "KV_JSCTL_SOMETHING") || strings.Contains(s, "OBJ_files") {
		t.Fatalf("the stream list:\n%s", s)
	}
	p.send("q")
	p.exit(30 * time.Second)
	p = startVT(t, f.cmd("pick", "--all"), 100, 30)
	p.waitFor("KV_JSCTL_SOMETHING")
	p.waitFor("OBJ_files")
	p.send("q")
	p.exit(30 * time.Second)
}
