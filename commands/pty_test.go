package commands_test

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/jsctl/jsctl/internal/testserver"
)

// ptyProc is jsctl running on a pseudo-terminal, as at an interactive shell.
type ptyProc struct {
	t    *testing.T
	tty  *os.File
	mu   sync.Mutex
	out  bytes.Buffer // everything the process wrote to the terminal
	sink io.Writer    // when set, also gets it, under mu (vtProc's emulator)
	done chan error
	eof  chan struct{} // closed when everything written to the terminal is read
	// show is what a failed wait prints: the output, or vtProc's screen.
	show func() string
}

func startPTY(t *testing.T, cmd *exec.Cmd) *ptyProc {
	t.Helper()
	return startTerminal(t, cmd, 200, 40, nil)
}

// startTerminal starts cmd on a cols×rows pseudo-terminal and reads it in
// the background. sink, when set, makes the writer that also gets the
// output, from the terminal (to which it can answer).
func startTerminal(t *testing.T, cmd *exec.Cmd, cols, rows int, sink func(tty *os.File) io.Writer) *ptyProc {
	t.Helper()
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: uint16(rows), Cols: uint16(cols)})
	if err != nil {
		t.Fatalf("start on a pty: %v", err)
	}
	p := &ptyProc{t: t, tty: tty, done: make(chan error, 1), eof: make(chan struct{})}
	p.show = p.output
	if sink != nil {
		p.sink = sink(tty)
	}
	go func() {
		defer close(p.eof)
		buf := make([]byte, 8192)
		for {
			n, err := tty.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			if p.sink != nil {
				_, _ = p.sink.Write(buf[:n])
			}
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		tty.Close()
	})
	return p
}

func (p *ptyProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// waitFor waits, bounded, until the terminal shows s.
func (p *ptyProc) waitFor(s string) {
	p.t.Helper()
	testserver.WaitFor(p.t, 30*time.Second, "the terminal to show "+s, func() bool { return strings.Contains(p.output(), s) })
}

// waitForMatch waits until the terminal has shown text matching re.
func (p *ptyProc) waitForMatch(re string) {
	p.t.Helper()
	rx := regexp.MustCompile(re)
	testserver.WaitFor(p.t, 30*time.Second, "the terminal to show "+re, func() bool { return rx.MatchString(p.output()) })
}

func (p *ptyProc) send(s string) {
	p.t.Helper()
	if _, err := io.WriteString(p.tty, s); err != nil {
		p.t.Fatal(err)
	}
}

// exit waits, at most within, for the process and returns its exit code.
// It also waits until the terminal's output is all read (the read ends when
// the last process holding the terminal has closed it), so that output()
// then holds everything the process wrote before it exited.
func (p *ptyProc) exit(within time.Duration) int {
	p.t.Helper()
	select {
	case err := <-p.done:
		select {
		case <-p.eof:
		case <-time.After(within):
			p.t.Fatalf("jsctl exited, but the terminal stays open after %s; terminal:\n%s", within, p.show())
		}
		return procExitCode(p.t, err)
	case <-time.After(within):
		p.t.Fatalf("jsctl still running after %s; terminal:\n%s", within, p.show())
	}
	return -1
}
