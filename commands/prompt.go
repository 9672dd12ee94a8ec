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

// applyRequest describes the plan a plan-first command is about to apply and
// the flags the user gave. Every plan-first command decides through
// askApply, so they all prompt, refuse and word their plans alike.
type applyRequest struct {
	// Execute is --execute: apply without asking.
	Execute bool
	// DryRun is --dry-run: only print the plan, even at a terminal.
	DryRun bool
	// Export is the --export file, if any: the plan is written for review,
	// and such a run never asks and never applies.
	Export string
	// Changes is the number of changes in the plan; none means nothing to
	// ask about.
	Changes int
	// Action names the change in errors: `reset consumers on "ORDERS"`.
	Action string
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

// askApply decides whether a plan is applied:
//   - --execute: yes, without asking (the caller prints the outcome);
//   - --export FILE: no, never asking: the plan is for review;
//   - --dry-run, --json, an empty plan, or stdin and stdout not both a
//     terminal: no, without reading stdin (scripts are never prompted);
//   - otherwise it prints the plan and asks on stderr. Only "y" or "yes"
//     applies; anything else, or end of input, is an ErrCancelled error;
//     so is Ctrl-C (ctx done), which returns at once.
//
// When it returns false with a nil error, the plan has been printed with a
// note saying that nothing changed.
func askApply(ctx context.Context, env *Env, p *Printer, r applyRequest) (bool, error) {
	switch {
	case r.Execute:
		return true, nil
	case r.Export != "":
		note := fmt.Sprintf("Plan written to %s; nothing changed.", r.Export)
		if r.Resume != "" {
			note += " Review it, then apply it with: " + r.Resume
		}
		return false, r.Print(note)
	case r.DryRun || p.JSON || r.Changes == 0 || !env.IsTerminal:
		return false, r.Print(dryRunNote)
	}
	if err := r.Print(""); err != nil {
		return false, err
	}
	q := "Apply this 1 change? [y/N] "
	if r.Changes != 1 {
		q = fmt.Sprintf("Apply these %s? [y/N] ", plural(r.Changes, "change", "changes"))
	}
	fmt.Fprint(env.Stderr, q)
	answer, err := readLine(ctx, env.Stdin)
	if err != nil {
		fmt.Fprintln(env.Stderr)
		return false, jsutil.Errorf(jsutil.ErrCancelled, "%s: interrupted at the prompt; nothing changed", r.Action)
	}
	if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
		return false, jsutil.Errorf(jsutil.ErrCancelled, "%s: not confirmed; nothing changed", r.Action)
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
