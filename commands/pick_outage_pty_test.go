//go:build linux

package commands_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/nats-io/nats.go"
)

// TestPickServerRestart: a real nats-server process is killed while the
// picker is open and a lookup is under way, then started again. Meanwhile
// the wait is said on the picker's own status line (nothing else writes
// to the terminal, though stderr is the terminal too); once the server
// answers the notice is gone, and the screen is exactly the one a picker
// opened afresh at the same place draws: no line it did not draw.
func TestPickServerRestart(t *testing.T) {
	t.Parallel() // mostly waits (on processes, servers, timers): runs beside the others
	s := natsproc.Start(t, natsproc.Options{JetStream: "sync_interval: always"})
	nc, err := nats.Connect(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	f := buildPickFixture(t, s.URL(), nc, 3, 3, 3, 3)
	at := humanSecond(f.groups[2][0].Time)

	p := startVT(t, f.cmd("pick", "ORDERS", "audit"), 100, 30)
	p.settled()
	s.Kill()
	p.typeTime(at)
	during := p.waitFor("no answer from the server; asking again for up to")
	if strings.Contains(during, "jsctl:") {
		t.Fatalf("something else wrote to the terminal during the outage:\n%s", during)
	}
	rows := strings.Split(during, "\n")
	last := -1
	for i, r := range rows {
		if strings.Contains(r, "asking again") {
			last = i
		}
		if strings.Contains(r, "←/→ 1s") && (last < 0 || i < last) {
			t.Fatalf("the notice is not on the status line above the keys:\n%s", during)
		}
	}
	s.Restart()
	_, _, seq, after := p.settledScreen()
	if seq != f.groups[2][0].Sequence {
		t.Fatalf("after the restart the picker shows %d, want %d:\n%s", seq, f.groups[2][0].Sequence, after)
	}
	p.waitScreen("the notice gone", func(s string) bool { return !strings.Contains(s, "asking again") && !strings.Contains(s, "looking up") })

	fresh := startVT(t, f.cmd("pick", "ORDERS", "audit", "--at", at), 100, 30)
	_, _, _, want := fresh.settledScreen()
	if got, want := trimRows(p.screen()), trimRows(want); got != want {
		t.Fatalf("after the outage the screen differs from a fresh picker's at the same place\nafter the outage:\n%s\nfresh:\n%s", got, want)
	}
	p.send("q")
	fresh.send("q")
	p.exit(testWaitExit)
	fresh.exit(testWaitExit)
}

// testWaitExit bounds the wait for a picker to exit after q.
const testWaitExit = 30 * time.Second

// trimRows is a screen with each row's trailing blanks removed.
func trimRows(s string) string {
	rows := strings.Split(s, "\n")
	for i, r := range rows {
		rows[i] = strings.TrimRight(r, " ")
	}
	return strings.TrimRight(strings.Join(rows, "\n"), "\n")
}
