package commands

import (
	"context"
	"fmt"
)

// listChange is the plan of a command whose changes are one request each
// (consumer pause and resume, snapshot rm): a title, one table row per
// object, and how to apply it. It follows the contract of consumer reset
// through askApply: the plan without --execute, the question at a
// terminal, --yes, --dry-run.
type listChange struct {
	command string // "consumer pause", in notes
	action  string // `pause consumers on "ORDERS"`, in errors
	title   string // the line above the table
	headers []string
	rows    [][]string
	// changes is how many rows change something.
	changes int
	// plan is the --json document of the plan (not applied).
	plan func() any
	// apply makes the changes and prints what was done.
	apply func() error
}

// immediateForm says whether the flags are the old immediate form of
// consumer pause, resume and snapshot rm: --yes without --execute (and
// without --dry-run), which acted at once. It is kept for one release with
// a note on stderr, and applies as --execute --yes; every other command
// refuses it (changeFlags.validate).
func (f changeFlags) immediateForm() bool {
	return f.Yes && !f.Execute && !f.DryRun
}

// validateList is changeFlags.validate, accepting the old immediate form.
func (f changeFlags) validateList() error {
	if f.immediateForm() {
		return nil
	}
	return f.validate()
}

// run prints the plan and asks, refuses or applies as askApply decides.
// The old immediate form applies with a deprecation note; a run without
// --execute and without a terminal (where the old form acted at once)
// says on stderr that it changed nothing.
func (l *listChange) run(ctx context.Context, env *Env, p *Printer, f changeFlags) error {
	switch {
	case f.immediateForm():
		fmt.Fprintf(env.Stderr, "jsctl: note: %s --yes without --execute is the old immediate form; it is deprecated and will be removed: write --execute --yes\n", l.command)
		f.Execute = true
	case !f.Execute && !f.DryRun && !env.IsTerminal:
		fmt.Fprintf(env.Stderr, "jsctl: note: %s no longer acts without --execute; nothing changed (add --execute to apply)\n", l.command)
	}
	apply, err := askApply(ctx, env, p, applyRequest{
		changeFlags: f, Changes: l.changes, Action: l.action,
		Print: func(note string) error {
			if p.JSON {
				return p.PrintJSON(l.plan())
			}
			p.Printf("%s\n", l.title)
			if len(l.rows) > 0 {
				if err := p.Table(l.headers, l.rows); err != nil {
					return err
				}
			}
			if note != "" {
				p.Printf("%s\n", note)
			}
			return nil
		},
	})
	if err != nil || !apply {
		return err
	}
	return l.apply()
}
