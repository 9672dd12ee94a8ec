package commands

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
)

// minProgressSteps is the least work worth a progress bar: shorter work is
// over before a bar would be read.
const minProgressSteps = 32

// progress draws a progress bar on stderr for long work (a timeline with
// many buckets; reset --all, acks forget/compact and consume's status line
// are meant to use it too). It is drawn only when stderr is a terminal,
// --json is off and no full-screen UI owns the terminal (the picker), so
// scripts and logs never see it; otherwise every method does nothing.
// The library reports through a callback (such as
// seek.TimelineOptions.Progress) and the command hands it Set.
//
// The rendering is github.com/schollz/progressbar/v3: throttled redraws,
// terminal-width aware, writes to any io.Writer and clears itself when
// done.
type progress struct {
	w           io.Writer
	description string
	bar         *progressbar.ProgressBar
}

// Progress returns a progress bar described by description, or one that
// draws nothing when stderr is not a terminal, --json is on or stderr is
// written as JSON (--log-format json).
func (e *Env) Progress(description string) *progress {
	if !e.StderrIsTerminal || e.Globals.JSON || e.logJSON() || e.notices != nil { // a UI owns the terminal
		return &progress{}
	}
	return &progress{w: e.Stderr, description: description}
}

// Set reports done of total steps; the bar appears once total reaches
// minProgressSteps. It may be called from any goroutine, one call at a
// time.
func (p *progress) Set(done, total int) {
	if p.w == nil || total < minProgressSteps {
		return
	}
	if p.bar == nil {
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetDescription(p.description),
			progressbar.OptionSetWidth(30),
			progressbar.OptionShowCount(),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	}
	p.bar.ChangeMax(total)
	_ = p.bar.Set(done)
}

// Done clears the bar, if one was drawn, before the command prints its
// result.
func (p *progress) Done() {
	if p.bar != nil {
		_ = p.bar.Finish()
		_ = p.bar.Clear()
	}
}

// stderrIsTerminal reports whether w is a terminal.
func stderrIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}
