//go:build linux

package trustmatrix

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/creack/pty"
	"github.com/hinshun/vt10x"
	"github.com/jsctl/jsctl/internal/testserver"
)

// pickRows: pick's recorded state is the plan the review screen shows,
// applied when the user answers y. The fault happens while the review is
// on the screen.
func pickRows() []row {
	inMemory := "the reviewed plan is in the running process's memory; no one else can write it"
	return []row{{
		name: "pick", command: "pick",
		record: func(c *cell) { c.base() },
		use:    func(c *cell) []string { return nil },
		runWith: func(c *cell, inject func()) result {
			return c.pick(inject)
		},
		cells: map[fault]expect{
			fStream:     refuse(recreated),
			fSame:       refuse(recreated),
			fOtherCfg:   refuse(recreated),
			fEdited:     holds("verified"),
			fUnparsable: notApplicable(inMemory),
			fOtherObj:   notApplicable(inMemory),
			fHostile:    notApplicable(inMemory),
		},
	}}
}

// pick runs `jsctl pick S C` on a pseudo-terminal with the cursor at
// message 3, opens the review, runs inject while the review is shown, and
// answers y.
func (c *cell) pick(inject func()) result {
	c.t.Helper()
	s, err := c.js.Stream(c.ctx(), c.S)
	if err != nil {
		c.t.Fatal(err)
	}
	m, err := s.GetMsg(c.ctx(), 3)
	if err != nil {
		c.t.Fatal(err)
	}
	args := []string{"pick", c.S, c.C, "--at", m.Time.UTC().Format(time.RFC3339Nano)}
	ctx, cancel := context.WithTimeout(context.Background(), runLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, jsctlBin(), args...)
	cmd.Env = append(c.environ(), "TERM=xterm-256color", "NO_COLOR=")
	cmd.Dir = c.home
	const cols, rows = 120, 40
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: rows, Cols: cols})
	if err != nil {
		c.t.Fatalf("start on a pty: %v", err)
	}
	defer tty.Close()
	var mu sync.Mutex
	var raw bytes.Buffer
	vt := vt10x.New(vt10x.WithSize(cols, rows), vt10x.WithWriter(tty))
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, 8192)
		for {
			n, err := tty.Read(buf)
			mu.Lock()
			raw.Write(buf[:n])
			_, _ = vt.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	screen := func() string {
		mu.Lock()
		defer mu.Unlock()
		return vt.String()
	}
	waitScreen := func(what string) {
		testserver.WaitFor(c.t, 30*time.Second, "the picker to show "+what, func() bool { return strings.Contains(screen(), what) })
	}
	send := func(s string) {
		if _, err := io.WriteString(tty, s); err != nil {
			c.t.Fatal(err)
		}
	}
	waitScreen("Plan: first delivery 3")
	send("\r")
	waitScreen("Apply this change?")
	inject()
	mark := c.srv.mark()
	send("y")
	err = cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		c.t.Fatalf("jsctl pick: %v", err)
	}
	if ctx.Err() != nil {
		c.t.Fatalf("jsctl pick did not end in %s; screen:\n%s", runLimit, screen())
	}
	select {
	case <-read:
	case <-time.After(10 * time.Second):
	}
	mu.Lock()
	out := raw.String()
	mu.Unlock()
	// What pick prints after the screen (the plan's result, or the
	// refusal) is on the terminal after the alternate screen ends.
	if i := strings.LastIndex(out, "\x1b[?1049l"); i >= 0 {
		out = out[i:]
	}
	return result{args: args, code: cmd.ProcessState.ExitCode(), stdout: out, stderr: out, published: c.srv.since(mark, c.tok)}
}
