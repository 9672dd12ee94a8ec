package commands

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/reset"
)

// TestNoticesToTheScreen: while a full-screen UI owns the terminal, every
// way jsctl writes to stderr reaches the UI as a line and nothing reaches
// stderr; once it is done, they write to stderr again.
func TestNoticesToTheScreen(t *testing.T) {
	writers := []struct {
		name  string
		write func(e *Env)
		want  string
	}{
		{"an unanswered request", func(e *Env) {
			e.waitLines().unanswered(jsutil.Unanswered{Until: time.Now().Add(20 * time.Second), Err: errors.New("timeout")})
		}, "no answer from the server; asking again for up to 20s (Ctrl-C to stop)"},
		{"a just-found bucket", func(e *Env) {
			e.waitLines().unanswered(jsutil.Unanswered{Until: time.Now().Add(5 * time.Second), Bucket: "JSCTL_ACKS"})
		}, `bucket "JSCTL_ACKS" was just found`},
		{"the drain of --pause", func(e *Env) {
			e.waitLines().drain(reset.Drain{Stream: "ORDERS", Consumer: "billing", Unacked: 1, Waited: time.Second, Timeout: 30 * time.Second})
		}, `waiting for 1 delivery of "billing" on "ORDERS" to be acknowledged, 1s of 30s`},
		{"a warning on env.Stderr", func(e *Env) { warnSkipped(e, []reset.BadRecord{{Key: "k", Problem: "not JSON"}}) }, "warning:"},
		{"a line written in pieces", func(e *Env) { fmt.Fprint(e.Stderr, "jsctl: note: a"); fmt.Fprint(e.Stderr, " b\n") }, "note: a b"},
		{"a progress bar", func(e *Env) { p := e.Progress("x"); p.Set(10, 100); p.Done() }, ""},
	}
	for _, w := range writers {
		var stderr bytes.Buffer
		e := &Env{Globals: &Globals{}, Stderr: &stderr, StderrIsTerminal: true}
		var mu sync.Mutex
		var got []string
		restore := e.noticesTo(func(s string) { mu.Lock(); got = append(got, s); mu.Unlock() })
		w.write(e)
		w.write(e) // not held back as stderr's lines are (waitNoticeEvery)
		restore()
		if stderr.Len() != 0 {
			t.Errorf("%s: written to stderr while the screen is the UI's: %q", w.name, stderr.String())
		}
		if w.want == "" {
			if len(got) != 0 {
				t.Errorf("%s: sent %q, want nothing", w.name, got)
			}
		} else if len(got) != 2 || !strings.Contains(got[0], w.want) || strings.HasPrefix(got[0], "jsctl: ") || strings.ContainsAny(got[0], "\r\n\x1b") {
			t.Errorf("%s: sent %q, want twice a line holding %q (no prefix, no controls)", w.name, got, w.want)
		}
		// Afterwards stderr is stderr again.
		if w.want != "" && w.name != "the drain of --pause" {
			w.write(e)
			if !strings.Contains(stderr.String(), w.want) {
				t.Errorf("%s: after the UI, stderr has %q", w.name, stderr.String())
			}
		}
	}
}

// TestTableFitsWidth: with Printer.Width a table too wide is printed as
// several, each with the first column, none lost and every line within
// the width.
func TestTableFitsWidth(t *testing.T) {
	headers := []string{"CONSUMER", "METHOD", "DELIVERED", "ACK FLOOR", "TO", "TO TIME", "REDELIVER", "SKIP", "ACK RECORDS", "STATUS"}
	rows := [][]string{{"billing", "reset", "24", "24", "14", "06:24:04.425", "11", "0", "11", "planned"}}
	var wide, narrow bytes.Buffer
	if err := (&Printer{W: &wide, Wide: true}).Table(headers, rows); err != nil {
		t.Fatal(err)
	}
	if err := (&Printer{W: &narrow, Width: 50}).Table(headers, rows); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(narrow.String(), "\n") {
		if len([]rune(l)) > 50 {
			t.Fatalf("a line of %d columns in a table fitted to 50:\n%s", len([]rune(l)), narrow.String())
		}
	}
	for _, cell := range append(append([]string{}, headers...), rows[0]...) {
		if !strings.Contains(narrow.String(), cell) {
			t.Fatalf("%q lost when fitted:\n%s", cell, narrow.String())
		}
	}
	if strings.Count(narrow.String(), "billing") < 2 {
		t.Fatalf("the first column is not repeated:\n%s", narrow.String())
	}
	var fits bytes.Buffer
	if err := (&Printer{W: &fits, Width: 200}).Table(headers, rows); err != nil || fits.String() != wide.String() {
		t.Fatalf("a table that fits is printed differently (%v):\n%s\nwant:\n%s", err, fits.String(), wide.String())
	}
}

// TestPickRefusals: each interactive command refuses without a terminal
// and names the command for scripts, with the names given.
func TestPickRefusals(t *testing.T) {
	e := &Env{Globals: &Globals{}}
	for _, c := range []struct{ stream, consumer, want string }{
		{"", "", "jsctl consumer reset STREAM CONSUMER --to-time T"},
		{"ORDERS", "", "jsctl consumer reset ORDERS CONSUMER --to-time T"},
		{"ORDERS", "my consumer", "jsctl consumer reset ORDERS 'my consumer' --to-time T"},
	} {
		err := needTerminal(e, "jsctl pick", resetInstead(c.stream, c.consumer))
		if err == nil || !errors.Is(err, jsutil.ErrBadInput) || err.Error() != "jsctl pick needs a terminal; in a script use: "+c.want {
			t.Errorf("%q %q: %v", c.stream, c.consumer, err)
		}
	}
}
