package commands

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/jsctl/jsctl/jsutil"
	"golang.org/x/term"
)

// isTerminal reports whether f is an interactive terminal (not merely a
// character device: /dev/null is one of those, and is no terminal).
func isTerminal(f *os.File) bool {
	return term.IsTerminal(int(f.Fd()))
}

// changeFlags are the flags of every command that changes or deletes state.
// One contract, decided in askApply: without --execute the command prints
// its plan and changes nothing, terminal or not (--dry-run says so
// explicitly); with --execute at a terminal it shows the plan and asks
// [y/N] (only y or yes, in any case, applies); --yes skips the question;
// without a terminal (or with --json) --execute applies without asking.
type changeFlags struct {
	Execute bool `name:"execute" help:"Apply the change (without it only the plan is printed; at a terminal jsctl asks first unless --yes)."`
	Yes     bool `name:"yes" short:"y" help:"With --execute: apply without asking, even at a terminal."`
	DryRun  bool `name:"dry-run" help:"Only print the plan and change nothing (the default; stated explicitly)."`
}

// validate checks the combinations every changing command refuses.
func (f changeFlags) validate() error {
	if f.Execute && f.DryRun {
		return jsutil.Errorf(jsutil.ErrBadInput, "--execute and --dry-run cannot be used together")
	}
	if f.Yes && !f.Execute {
		return jsutil.Errorf(jsutil.ErrBadInput, "--yes answers the question --execute asks at a terminal: add --execute (without it nothing changes)")
	}
	return nil
}

// applyRequest describes the plan a plan-first command is about to apply and
// the flags the user gave. Every command that changes state decides through
// askApply, so they all prompt, refuse and word their plans alike.
type applyRequest struct {
	changeFlags
	// Export is the --export file, if any: the plan is written for review,
	// and such a run never asks and never applies.
	Export string
	// Changes is the number of changes in the plan; none means nothing to
	// ask about.
	Changes int
	// Action names the change in errors: `reset consumers on "ORDERS"`.
	Action string
	// Question overrides the question asked ("Apply this 1 change?").
	Question string
	// Print prints the plan followed by note (a line for people; "" for
	// none). In --json mode it prints the JSON document and ignores note.
	Print func(note string) error
	// Resume is how to apply an exported plan, shown after the export:
	// "jsctl consumer reset --from-file plan.json --execute".
	Resume string
}

// Notes printed under a plan that was not applied.
const (
	dryRunNote = "Dry run: nothing changed. Pass --execute to apply."
)

// plural says "1 change" or "2 changes".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// askApply decides whether a plan is applied (see changeFlags):
//   - --export FILE: no, never asking: the plan is for review;
//   - no --execute (or --dry-run): no; the plan is printed with a note
//     saying nothing changed, and stdin is never read;
//   - --execute with an empty plan: yes (there is nothing to ask about);
//   - --execute with --yes, --json, or stdin and stdout not both a
//     terminal: yes, without asking (scripts are never prompted);
//   - --execute at a terminal: it prints the plan and asks on stderr. Only
//     "y" or "yes" (any case) applies; anything else, or end of input, is
//     an ErrCancelled error; so is Ctrl-C (ctx done), which returns at once.
//
// When it returns false with a nil error, the plan has been printed with a
// note saying that nothing changed.
func askApply(ctx context.Context, env *Env, p *Printer, r applyRequest) (bool, error) {
	switch {
	case r.Export != "":
		note := fmt.Sprintf("Plan written to %s; nothing changed.", r.Export)
		if r.Resume != "" {
			note += " Review it, then apply it with: " + r.Resume
		}
		return false, r.Print(note)
	case !r.Execute || r.DryRun:
		return false, r.Print(dryRunNote)
	}
	if r.Changes > 0 {
		if err := env.needReason(r.Action); err != nil {
			return false, err
		}
	}
	if r.Changes == 0 || r.Yes || p.JSON || !env.IsTerminal {
		return true, nil
	}
	if err := r.Print(""); err != nil {
		return false, err
	}
	q := r.Question
	switch {
	case q != "":
	case r.Changes == 1:
		q = "Apply this 1 change?"
	default:
		q = fmt.Sprintf("Apply these %s?", plural(r.Changes, "change", "changes"))
	}
	return confirm(ctx, env, q, r.Action)
}

// confirm asks question with [y/N] on stderr and reads the answer: only "y"
// or "yes" (any case) is a yes; anything else, end of input or ctx ending
// (Ctrl-C, at once) is an ErrCancelled error naming action.
func confirm(ctx context.Context, env *Env, question, action string) (bool, error) {
	fmt.Fprint(env.Stderr, question+" [y/N] ")
	answer, err := readLine(ctx, env.Stdin)
	if err != nil {
		fmt.Fprintln(env.Stderr)
		return false, jsutil.Errorf(jsutil.ErrCancelled, "%s: interrupted at the prompt; nothing changed", action)
	}
	if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
		return false, jsutil.Errorf(jsutil.ErrCancelled, "%s: not confirmed; nothing changed", action)
	}
	return true, nil
}

// readLine reads one line from r, returning at once with ctx's error when
// ctx is done first (Ctrl-C at a prompt must not wait for Enter). The
// reading goroutine is left behind in that case; the process is ending.
func readLine(ctx context.Context, r io.Reader) (string, error) {
	type result struct {
		line string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		line, err := bufio.NewReader(r).ReadString('\n')
		if err == io.EOF {
			err = nil // end of input is a "no", not an error
		}
		ch <- result{line, err}
	}()
	select {
	case res := <-ch:
		return res.line, res.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}
