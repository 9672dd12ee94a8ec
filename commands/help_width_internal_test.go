package commands

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/jsctl/jsctl/jsutil"
)

// wideLines returns the lines of text wider than width columns, with
// their widths, for an error message.
func wideLines(text string, width int) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if textWidth(l) > width {
			out = append(out, l)
		}
	}
	return out
}

// runHelp is jsctl ARGS... without a terminal: its stdout, failing the
// test on a non-zero exit.
func runHelp(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Run(context.Background(), args, strings.NewReader(""), &out, &errb, false); code != 0 {
		t.Fatalf("jsctl %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
	}
	return out.String()
}

// TestHelpFitsEightyColumns runs "jsctl help ..." for the root, every
// command and group of the command model, and every help topic, and fails
// on a line wider than 80 columns: a new command or topic cannot skip it.
func TestHelpFitsEightyColumns(t *testing.T) {
	p, err := newParser(&CLI{}, &Env{}, &bytes.Buffer{}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	cases := [][]string{{}, {"help"}, {"--help"}}
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, c := range n.Children {
			if c.Hidden {
				continue
			}
			cases = append(cases, append([]string{"help"}, strings.Fields(c.Path())...))
			walk(c)
		}
	}
	walk(p.Model.Node)
	for topic := range helpTopics() {
		cases = append(cases, []string{"help", topic})
	}
	if len(cases) < 30 {
		t.Fatalf("only %d help texts found in the model", len(cases))
	}
	widest := 0
	for _, args := range cases {
		out := runHelp(t, args...)
		for _, l := range wideLines(out, 80) {
			t.Errorf("jsctl %s: line of %d columns: %q", strings.Join(args, " "), textWidth(l), l)
		}
		for _, l := range strings.Split(out, "\n") {
			widest = max(widest, textWidth(l))
		}
	}
	t.Logf("%d help texts, widest line %d columns", len(cases), widest)
}

// TestRootHelpListsCommandsFirst: "jsctl" and "jsctl help" show the
// commands before the examples, the exit codes and the flags.
func TestRootHelpListsCommandsFirst(t *testing.T) {
	for _, args := range [][]string{{}, {"help"}} {
		out := runHelp(t, args...)
		cmds := strings.Index(out, "\nCommands:\n")
		for _, later := range []string{"\nExamples:\n", "\nExit codes:\n", "\nFlags:\n", "\nConnection flags"} {
			if i := strings.Index(out, later); cmds < 0 || i < cmds {
				t.Errorf("jsctl %s: %q at %d, Commands: at %d (want the commands first)", strings.Join(args, " "), strings.TrimSpace(later), i, cmds)
			}
		}
	}
}

// TestFitLines fits every help topic and the root help to narrower widths,
// keeping every word and the example commands whole.
func TestFitLines(t *testing.T) {
	texts := []string{rootHelp, exitCodesHelp}
	for _, s := range helpTopics() {
		texts = append(texts, s)
	}
	for _, width := range []int{50, 60, 72, 80} {
		for _, text := range texts {
			got := fitLines(text, width)
			for _, l := range wideLines(got, width) {
				t.Errorf("width %d: line of %d columns: %q", width, textWidth(l), l)
			}
			chars := func(s string) map[rune]int { // what is printed, in any order
				m := map[rune]int{}
				for _, r := range s {
					m[r]++
				}
				return m
			}
			want, have := chars(text), chars(got)
			for r, n := range want {
				if r != ' ' && r != '\n' && have[r] < n {
					t.Errorf("width %d: %q lost (%d of %d)", width, r, have[r], n)
				}
			}
		}
	}
	if got := fitLines("  jsctl consumer reset ORDERS billing --to-time 10:00 --execute  # apply it now", 50); got != "  # apply it now\n  jsctl consumer reset ORDERS billing --to-time \\\n      10:00 --execute" {
		t.Errorf("example at 50 columns:\n%s", got)
	}
}

// TestManPageFitsEightyColumns: the page's prose is filled (roff fills it
// to the reader's width), and every no-fill line (examples, tables) fits
// 80 columns once man indents it; rendered with man(1) when it is
// installed.
func TestManPageFitsEightyColumns(t *testing.T) {
	page := runHelp(t, "man")
	noFill, fill := false, 0
	for _, l := range strings.Split(page, "\n") {
		switch {
		case l == ".nf":
			noFill = true
		case l == ".fi":
			noFill = false
		case noFill && textWidth(strings.ReplaceAll(strings.ReplaceAll(l, `\-`, "-"), `\e`, `\`)) > manNoFillWidth:
			t.Errorf("no-fill line wider than %d: %q", manNoFillWidth, l)
		case !noFill && l != "" && !strings.HasPrefix(l, "."):
			fill++
		}
	}
	if fill < 500 {
		t.Errorf("only %d lines of filled prose: is the page all no-fill again?", fill)
	}
	if _, err := exec.LookPath("man"); err != nil {
		t.Logf("man is not installed: checked the page's source only")
		return
	}
	path := filepath.Join(t.TempDir(), "jsctl.1")
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("man", "-l", path)
	cmd.Env = append(os.Environ(), "MANWIDTH=80", "MANPAGER=cat", "PAGER=cat", "LC_ALL=C.UTF-8")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("man -l: %v", err)
	}
	widest := 0
	for _, l := range strings.Split(string(out), "\n") {
		widest = max(widest, textWidth(l))
		if textWidth(l) > 80 {
			t.Errorf("rendered at MANWIDTH=80, a line of %d columns: %q", textWidth(l), l)
		}
	}
	t.Logf("man page rendered at MANWIDTH=80: %d lines, widest %d columns", strings.Count(string(out), "\n"), widest)
}

// TestTimesTopicNamesEveryForm: the times topic lays the forms out in a
// table; every example of jsutil.TimeForms (what the parser's errors name)
// is in it.
func TestTimesTopicNamesEveryForm(t *testing.T) {
	topic := helpTopics()["times"]
	parts := strings.Split(jsutil.TimeForms, `"`)
	n := 0
	for i := 1; i < len(parts); i += 2 {
		n++
		if !strings.Contains(topic, `"`+parts[i]+`"`) {
			t.Errorf("jsctl help times lacks the form %q", parts[i])
		}
	}
	if n < 10 {
		t.Fatalf("only %d quoted forms in jsutil.TimeForms", n)
	}
}

// TestHelpFlagsSoon: every command's --help reaches its arguments or flags
// within helpProseLines lines; the long contracts live in help topics and
// docs/ (consume's handler contract is "jsctl help handler").
func TestHelpFlagsSoon(t *testing.T) {
	const helpProseLines = 90
	p, err := newParser(&CLI{}, &Env{}, &bytes.Buffer{}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	for _, leaf := range p.Model.Leaves(false) {
		if leaf.Hidden {
			continue
		}
		out := runHelp(t, append(strings.Fields(leaf.Path()), "--help")...)
		lines := strings.Split(out, "\n")
		at := -1
		for i, l := range lines {
			if l == "Arguments:" || l == "Flags:" {
				at = i
				break
			}
		}
		if at < 0 || at > helpProseLines {
			t.Errorf("jsctl %s --help: its arguments or flags start at line %d (at most %d)", leaf.Path(), at+1, helpProseLines)
		}
	}
}
