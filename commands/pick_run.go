package commands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/jsctl/jsctl/internal/picker"
	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/jsctl/jsctl/jsutil/seek"
)

// pickRequest is a picker run for a reset (pick, consumer reset -i).
type pickRequest struct {
	stream, consumer string
	flags            pickFlags
	opts             reset.Options
	// all lists the streams of KV buckets and object stores too.
	all bool
	// what names the command in the terminal refusal and on leaving.
	what string
}

// needTerminal refuses an interactive command when stdin and stdout are
// not both a terminal, so a script never hangs on it, and names the
// command a script uses instead.
func needTerminal(env *Env, what, instead string) error {
	if env.IsTerminal {
		return nil
	}
	return jsutil.Errorf(jsutil.ErrBadInput, "%s needs a terminal; in a script use: %s", what, instead)
}

// resetInstead is the command a script uses instead of the picker for a
// reset: the names given, else their placeholders.
func resetInstead(stream, consumer string) string {
	args := []string{"STREAM", "CONSUMER"}
	if stream != "" {
		args[0] = quoteArgs([]string{Escape(stream)})
	}
	if consumer != "" {
		args[1] = quoteArgs([]string{Escape(consumer)})
	}
	return "jsctl consumer reset " + args[0] + " " + args[1] + " --to-time T"
}

// leftPicker is how a picker left without a change ends: one plain line
// on stderr (a choice, not an error) and exit 6.
func leftPicker(env *Env, format string, args ...any) error {
	fmt.Fprintf(env.Stderr, format+"\n", args...)
	return &ExitStatus{Code: ExitCancelled}
}

// colorAllowed follows https://no-color.org: NO_COLOR set to anything but
// "" turns colours off.
func colorAllowed() bool { return os.Getenv("NO_COLOR") == "" }

// errPickerStopped is a picker ended by a signal or a lost terminal.
var errPickerStopped = errors.New("stopped")

// runTUI runs the picker on the terminal (the alternate screen, restored
// after Ctrl-C, a panic, a signal or a lost terminal) and returns how it
// ended. While it runs the screen is the picker's: what jsctl would write
// on stderr (a request asked again, a warning) goes to its status line,
// and the timeline's progress to its strip.
func runTUI(ctx context.Context, env *Env, m *picker.Model, src *picker.JetStreamSource) (picker.Outcome, error) {
	prog := tea.NewProgram(m, tea.WithInput(env.Stdin), tea.WithOutput(terminalOf(env.Stdout)), tea.WithContext(ctx))
	restore := env.noticesTo(func(s string) { prog.Send(picker.Notice{Text: s}) })
	src.Progress = func(done, total int) { prog.Send(picker.TimelineProgress{Done: done, Total: total}) }
	_, err := prog.Run()
	restore()
	switch {
	case errors.Is(err, tea.ErrProgramPanic):
		return picker.Outcome{}, fmt.Errorf("the picker failed (a bug in jsctl, please report it): %w", err)
	case errors.Is(err, tea.ErrProgramKilled), errors.Is(err, tea.ErrInterrupted):
		return picker.Outcome{}, errPickerStopped
	case err != nil:
		return picker.Outcome{}, err
	}
	return m.Outcome(), nil
}

// runPickReset runs the picker for a reset and executes the reviewed plan
// as consumer reset --execute does.
func runPickReset(ctx context.Context, env *Env, req pickRequest) error {
	if err := needTerminal(env, req.what, resetInstead(req.stream, req.consumer)); err != nil {
		return err
	}
	if err := env.needReason(req.what); err != nil { // before the screen, not after the choice
		return err
	}
	p, err := env.Printer()
	if err != nil {
		return err
	}
	at, since, until, err := req.flags.times(env)
	if err != nil {
		return err
	}
	cl, err := env.Client(ctx)
	if err != nil {
		return err
	}
	src := &picker.JetStreamSource{JS: cl.JS, Opts: req.opts, Since: since, Until: until, Now: env.Now, Parse: env.ParseTime, Explain: cl.Explain}
	// The picker's requests end with it: none is left to say on stderr
	// that it asks again once the screen is gone.
	pickCtx, stop := context.WithCancel(ctx)
	defer stop()
	m := picker.New(pickCtx, src, picker.Config{
		Kind: picker.ForReset, Stream: req.stream, Consumer: req.consumer, Preview: req.flags.Subject, AllStreams: req.all,
		Mode: seek.Mode(req.flags.Mode), Start: at, Loc: p.Loc, Color: colorAllowed(), ShowMessages: req.flags.ShowMessages,
		RenderPlan: func(pl *reset.Plan, width int) string {
			var buf bytes.Buffer
			r := &planRun{plans: []*reset.Plan{pl}, target: pl.Target, title: "target " + pl.Target.String()}
			_ = r.print(&Printer{W: &buf, Loc: p.Loc, Now: p.Now, Width: width}, "")
			return buf.String()
		},
	})
	out, err := runTUI(ctx, env, m, src)
	stop()
	switch {
	case errors.Is(err, errPickerStopped):
		return leftPicker(env, "%s: stopped; nothing changed", req.what)
	case err != nil:
		return err
	case !out.Done || out.Plan == nil:
		return leftPicker(env, "%s: left without applying; nothing changed", req.what)
	}
	r := &planRun{
		plans: []*reset.Plan{out.Plan}, target: out.Plan.Target, opts: req.opts, change: changeFlags{Execute: true, Yes: true}, // confirmed on the review screen
		title: "target " + out.Plan.Target.String(), action: fmt.Sprintf("reset consumers on %q", out.Plan.Stream),
	}
	return r.run(ctx, env, p, cl.JS)
}

// runPickSeek runs the picker for seek -i and then prints what
// `jsctl seek STREAM TIME` prints for the chosen message's own time.
func runPickSeek(ctx context.Context, env *Env, c *SeekCmd) error {
	if err := needTerminal(env, "jsctl seek --interactive", "jsctl seek "+quoteArgs([]string{Escape(c.Stream)})+" TIME"); err != nil {
		return err
	}
	p, err := env.Printer()
	if err != nil {
		return err
	}
	var at time.Time
	if c.Time != "" {
		if at, err = env.ParseTime(c.Time); err != nil {
			return err
		}
	}
	cl, err := env.Client(ctx)
	if err != nil {
		return err
	}
	src := &picker.JetStreamSource{JS: cl.JS, Now: env.Now, Parse: env.ParseTime, Explain: cl.Explain}
	pickCtx, stop := context.WithCancel(ctx)
	defer stop()
	m := picker.New(pickCtx, src, picker.Config{
		Kind: picker.ForSeek, Stream: c.Stream, Preview: c.Subject, Mode: seek.Mode(c.Mode), Start: at, Loc: p.Loc, Color: colorAllowed(),
	})
	out, err := runTUI(ctx, env, m, src)
	stop()
	switch {
	case errors.Is(err, errPickerStopped):
		return leftPicker(env, "jsctl seek --interactive: stopped without choosing a time")
	case err != nil:
		return err
	case !out.Done:
		return leftPicker(env, "jsctl seek --interactive: left without choosing a time")
	}
	if out.Time.IsZero() {
		out.Time = env.Now()
	}
	done := *c
	done.Interactive = false
	done.Time, done.Mode, done.Subject = out.Time.UTC().Format(time.RFC3339Nano), string(out.Mode), out.Preview
	return done.Run(ctx, env)
}
