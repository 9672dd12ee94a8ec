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
	// what names the command in the terminal refusal.
	what string
}

// needTerminal refuses an interactive command when stdin and stdout are
// not both a terminal, so a script never hangs on it.
func needTerminal(env *Env, what string) error {
	if env.IsTerminal {
		return nil
	}
	return jsutil.Errorf(jsutil.ErrBadInput, "%s needs a terminal; use --to-time", what)
}

// colorAllowed follows https://no-color.org: NO_COLOR set to anything but
// "" turns colours off.
func colorAllowed() bool { return os.Getenv("NO_COLOR") == "" }

// runTUI runs the picker on the terminal (the alternate screen, restored
// after Ctrl-C, a panic, a signal or a lost terminal) and returns how it
// ended.
func runTUI(ctx context.Context, env *Env, m *picker.Model) (picker.Outcome, error) {
	prog := tea.NewProgram(m, tea.WithInput(env.Stdin), tea.WithOutput(terminalOf(env.Stdout)), tea.WithContext(ctx))
	_, err := prog.Run()
	switch {
	case errors.Is(err, tea.ErrProgramPanic):
		return picker.Outcome{}, fmt.Errorf("the picker failed (a bug in jsctl, please report it): %w", err)
	case errors.Is(err, tea.ErrProgramKilled), errors.Is(err, tea.ErrInterrupted):
		return picker.Outcome{}, jsutil.Errorf(jsutil.ErrCancelled, "the picker was stopped; nothing changed")
	case err != nil:
		return picker.Outcome{}, err
	}
	return m.Outcome(), nil
}

// runPickReset runs the picker for a reset and executes the reviewed plan
// as consumer reset --execute does.
func runPickReset(ctx context.Context, env *Env, req pickRequest) error {
	if err := needTerminal(env, req.what); err != nil {
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
	src := &picker.JetStreamSource{JS: cl.JS, Opts: req.opts, Since: since, Until: until, Now: env.Now, Parse: env.ParseTime}
	m := picker.New(ctx, src, picker.Config{
		Kind: picker.ForReset, Stream: req.stream, Consumer: req.consumer, Subject: req.flags.Subject,
		Mode: seek.Mode(req.flags.Mode), Start: at, Loc: p.Loc, Color: colorAllowed(), ShowMessages: req.flags.ShowMessages,
		RenderPlan: func(pl *reset.Plan) string {
			var buf bytes.Buffer
			r := &planRun{plans: []*reset.Plan{pl}, target: pl.Target, title: "target " + pl.Target.String()}
			_ = r.print(&Printer{W: &buf, Loc: p.Loc}, "")
			return buf.String()
		},
	})
	out, err := runTUI(ctx, env, m)
	if err != nil {
		return err
	}
	if !out.Done || out.Plan == nil {
		return jsutil.Errorf(jsutil.ErrCancelled, "%s: left without applying; nothing changed", req.what)
	}
	r := &planRun{
		plans: []*reset.Plan{out.Plan}, target: out.Plan.Target, opts: req.opts, change: changeFlags{Execute: true, Yes: true}, // confirmed on the review screen
		title: "target " + out.Plan.Target.String(), action: fmt.Sprintf("reset consumers on %q", out.Plan.Stream),
	}
	return r.run(ctx, env, p, cl.JS)
}

// runPickSeek runs the picker for seek -i and then prints what
// `jsctl seek STREAM TIME` prints for the chosen time.
func runPickSeek(ctx context.Context, env *Env, c *SeekCmd) error {
	if err := needTerminal(env, "jsctl seek --interactive"); err != nil {
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
	src := &picker.JetStreamSource{JS: cl.JS, Now: env.Now, Parse: env.ParseTime}
	m := picker.New(ctx, src, picker.Config{
		Kind: picker.ForSeek, Stream: c.Stream, Subject: c.Subject, Mode: seek.Mode(c.Mode), Start: at, Loc: p.Loc, Color: colorAllowed(),
	})
	out, err := runTUI(ctx, env, m)
	if err != nil {
		return err
	}
	if !out.Done {
		return jsutil.Errorf(jsutil.ErrCancelled, "jsctl seek --interactive: left without choosing a time")
	}
	done := *c
	done.Interactive = false
	done.Time, done.Mode, done.Subject = out.Time.UTC().Format(time.RFC3339), string(out.Mode), out.Subject
	return done.Run(ctx, env)
}
