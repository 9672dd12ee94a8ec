package commands

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// How a handler's process is run and stopped. The process (the shell
// running CMD: sh -c on Unix, cmd /d /s /c on Windows, or --shell) is the
// root of a process tree of its own (procTree: a process group on Unix, a
// job object in a new console process group on Windows), so a terminal's
// Ctrl-C reaches only jsctl. Its exit decides the outcome, not its
// children:
//   - When it exits, jsctl waits for its output to end (the pipes to
//     close) while output still arrives: until handlerOutputGrace passes
//     with no output, handlerOutputLimit at most. Only then does it judge
//     by its exit status (and, in a batch, the result lines read by then),
//     so output the process wrote before it exited is never cut short by a
//     slow reader. A process it started that still holds its stdout or
//     stderr then is reported (a warning naming
//     the messages) and asked to end with the rest of its tree
//     (procTree.terminate); it never turns a success into a failure. A
//     background process whose output is redirected (cmd >/dev/null 2>&1 &)
//     is left alone.
//   - When jsctl must stop it (a lost lease, the stop timeout after
//     SIGINT/SIGTERM), its whole tree is asked to end (terminate: SIGTERM,
//     or CTRL_BREAK on Windows), and killed (kill: SIGKILL, or the job
//     object terminated) handlerKillGrace later if anything of it is still
//     there.
const (
	handlerOutputGrace = time.Second
	handlerOutputLimit = 10 * time.Second
	handlerKillGrace   = 5 * time.Second
)

// procTree is a started handler process and the processes it starts, as
// this platform stops them together (exec_unix.go, exec_windows.go).
// startTree(cmd) starts cmd as the root of a new one.
type procTree interface {
	// terminate asks every process of the tree to end: SIGTERM to the
	// process group; on Windows CTRL_BREAK to its console process group
	// (or, where that cannot be sent, kill).
	terminate()
	// kill ends them at once: SIGKILL to the process group; on Windows
	// the job object is terminated.
	kill()
	// release lets go of the tree once jsctl is done with it, leaving any
	// process still running alone (on Windows, the job object's handle is
	// closed).
	release()
}

// command is the handler's process for one run, with env added to jsctl's
// own environment (not yet started: runProcess starts it).
func (c execHandler) command(env ...string) *exec.Cmd {
	cmd := c.run.command()
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// runProcess runs cmd with stdin as its input and its output copied to
// stdout and stderr (stderr nil: both to stdout), as described above. It
// returns the process's outcome as exec reports it, whether a process it
// started still held its output after it exited (lingered), and whether
// that output was still arriving when it was cut off (cut: the limit).
func runProcess(ctx context.Context, cmd *exec.Cmd, stdin []byte, stdout, stderr io.Writer) (lingered, cut bool, err error) {
	var parentEnds, childEnds []*os.File
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			_ = f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			parentEnds, childEnds = append(parentEnds, r), append(childEnds, w)
		}
		return r, w, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return false, false, err
	}
	childEnds, parentEnds = append(childEnds, inR), append(parentEnds, inW)
	outR, outW, err := pipe()
	if err != nil {
		closeAll(append(parentEnds, childEnds...))
		return false, false, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, outW
	readers := []*os.File{outR}
	dsts := []io.Writer{stdout}
	if stderr != nil {
		errR, errW, err := pipe()
		if err != nil {
			closeAll(append(parentEnds, childEnds...))
			return false, false, err
		}
		cmd.Stderr = errW
		readers, dsts = append(readers, errR), append(dsts, stderr)
	}
	tree, err := startTree(cmd)
	closeAll(childEnds) // the child has its own copies
	if err != nil {
		closeAll(parentEnds)
		return false, false, err
	}
	defer tree.release()
	go func() { // a command that does not read its input gets EPIPE: fine
		_, _ = inW.Write(stdin)
		_ = inW.Close()
	}()
	var copies sync.WaitGroup
	var copied atomic.Int64 // bytes of output read so far
	for i, r := range readers {
		copies.Add(1)
		go func() {
			defer copies.Done()
			_, _ = io.Copy(countingWriter{dsts[i], &copied}, r)
		}()
	}
	outputDone := make(chan struct{})
	go func() {
		copies.Wait()
		close(outputDone)
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	// Until it exits: stop its tree when ctx ends.
	done, stopped := ctx.Done(), false
	var kill <-chan time.Time
	for exited := false; !exited; {
		select {
		case err = <-waited:
			exited = true
		case <-done:
			done, stopped = nil, true
			tree.terminate()
			kill = time.After(handlerKillGrace)
		case <-kill:
			kill = nil
			tree.kill()
		}
	}
	// Then its output, while it still arrives (or, when it was stopped,
	// for what is left of the kill grace).
	var ended bool
	if stopped && kill != nil {
		select {
		case <-outputDone:
			ended = true
		case <-kill:
		}
	} else {
		quiet, limit := time.NewTicker(handlerOutputGrace), time.NewTimer(handlerOutputLimit)
		ended, cut = outputEnds(outputDone, copied.Load, copied.Load(), quiet.C, limit.C)
		quiet.Stop()
		limit.Stop()
	}
	if !ended {
		lingered = true
		if stopped {
			tree.kill()
		} else {
			tree.terminate()
		}
		closeAll(readers) // its output from now on goes nowhere
		<-outputDone
	}
	closeAll(readers)
	_ = inW.Close() // unblocks a write to a process that holds its input unread
	return lingered, cut, err
}

// outputEnds waits for a process's output to end after it exited, while
// output still arrives: it reports ended false when a quiet tick finds no
// output read since the one before (or, for the first, since copied was
// last), and also cut when limit fires first.
func outputEnds(done <-chan struct{}, copied func() int64, last int64, quiet, limit <-chan time.Time) (ended, cut bool) {
	for {
		select {
		case <-done:
			return true, false
		case <-limit:
			return false, true
		case <-quiet:
			n := copied()
			if n == last {
				return false, false
			}
			last = n
		}
	}
}

// countingWriter counts what passes through it.
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// lingerNotes collects the messages whose command left a process holding
// its output, for one warning at the end of the run.
type lingerNotes struct {
	mu   sync.Mutex
	seqs []uint64
}

func (n *lingerNotes) add(seqs ...uint64) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.seqs = append(n.seqs, seqs...)
}

// warning is the one warning about them, "" when there were none.
func (n *lingerNotes) warning() string {
	if n == nil {
		return ""
	}
	n.mu.Lock()
	seqs := append([]uint64(nil), n.seqs...)
	n.mu.Unlock()
	if len(seqs) == 0 {
		return ""
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	const show = 20
	var b strings.Builder
	for i, s := range seqs {
		if i == show {
			fmt.Fprintf(&b, " and %d more", len(seqs)-show)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, s)
	}
	what := "message"
	if len(seqs) > 1 {
		what = "messages"
	}
	return fmt.Sprintf("the command for %s %s exited but left a process holding its output (%v without output, or %v at most); that process was sent %s and the outcome judged by the command's exit status (redirect a background process's output, cmd >/dev/null 2>&1 &, to keep it running)",
		what, b.String(), handlerOutputGrace, handlerOutputLimit, terminateText)
}
