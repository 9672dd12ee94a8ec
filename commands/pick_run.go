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
	"github.com/nats-io/nats.go/jetstream"
)

// pickAround is how many neighbours the picker shows on each side.
const pickAround = 2

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

// pickSource answers the picker from jsutil/seek and jsutil/reset, the
// packages seek, stream timeline and consumer reset use.
type pickSource struct {
	env          *Env
	js           jetstream.JetStream
	opts         reset.Options
	since, until time.Time
}

func (s *pickSource) Streams(ctx context.Context) ([]picker.StreamRow, error) {
	names, err := jsutil.ListStreamNames(ctx, s.js)
	if err != nil {
		return nil, jsutil.Wrap(err, "list streams")
	}
	rows := make([]picker.StreamRow, 0, len(names))
	for _, n := range names {
		sum, err := seek.Summarize(ctx, s.js, n)
		if err != nil {
			return nil, err
		}
		rows = append(rows, picker.StreamRow{Name: n, Messages: sum.Messages, First: sum.FirstTime, Last: sum.LastTime})
	}
	return rows, nil
}

func (s *pickSource) Consumers(ctx context.Context, stream string) ([]picker.ConsumerRow, error) {
	list, err := reset.List(ctx, s.js, stream, s.env.Now())
	if err != nil {
		return nil, err
	}
	var rows []picker.ConsumerRow
	for _, c := range list {
		if !c.Durable || c.Missing {
			continue
		}
		rows = append(rows, picker.ConsumerRow{Name: c.Consumer, Delivered: c.Delivered, AckFloor: c.AckFloor,
			AckFloorTime: c.AckFloorTime, Pending: c.Pending, Paused: c.Paused, Filters: c.Filters})
	}
	return rows, nil
}

func (s *pickSource) Seek(ctx context.Context, stream string, t time.Time, mode seek.Mode, subject string) (*seek.Result, error) {
	return seek.Seek(ctx, s.js, stream, t, seek.Options{Mode: mode, Subject: subject, Around: pickAround})
}

func (s *pickSource) Timeline(ctx context.Context, stream, subject string, buckets int) (*seek.TimelineResult, error) {
	return seek.Timeline(ctx, s.js, stream, seek.TimelineOptions{Since: s.since, Until: s.until, Buckets: buckets, Subject: subject})
}

func (s *pickSource) Plan(ctx context.Context, stream, consumer string, t time.Time, mode seek.Mode, show int) (*reset.Plan, error) {
	opts := s.opts
	opts.ShowMessages = show
	return reset.NewPlan(ctx, s.js, stream, []string{consumer}, false, reset.Target{Kind: reset.ToTime, Time: t, Mode: string(mode)}, opts)
}

func (s *pickSource) ParseTime(text string) (time.Time, error) { return s.env.ParseTime(text) }

// colorAllowed follows https://no-color.org: NO_COLOR set to anything but
// "" turns colours off.
func colorAllowed() bool { return os.Getenv("NO_COLOR") == "" }

// runTUI runs the picker on the terminal (the alternate screen, restored
// after Ctrl-C, a panic, a signal or a lost terminal) and returns how it
// ended.
func runTUI(ctx context.Context, env *Env, m *picker.Model) (picker.Outcome, error) {
	prog := tea.NewProgram(m, tea.WithInput(env.Stdin), tea.WithOutput(env.Stdout), tea.WithContext(ctx))
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
	src := &pickSource{env: env, js: cl.JS, opts: req.opts, since: since, until: until}
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
		plans: []*reset.Plan{out.Plan}, target: out.Plan.Target, opts: req.opts, execute: true,
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
	src := &pickSource{env: env, js: cl.JS}
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
