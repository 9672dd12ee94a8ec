package commands

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// runCLI is jsctl ARGS... without a terminal, against no server.
func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Run(context.Background(), append([]string{"-s", "nats://127.0.0.1:1"}, args...), strings.NewReader(""), &out, &errb, false)
	return code, out.String(), errb.String()
}

// TestHelpUnknownWordListsTopics: "jsctl help bogus" is a usage error that
// lists every help topic.
func TestHelpUnknownWordListsTopics(t *testing.T) {
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"help", "bogus"}, strings.NewReader(""), &out, &errb, false)
	if code != ExitUsage || out.Len() != 0 {
		t.Fatalf("jsctl help bogus: exit %d, stdout %q", code, out.String())
	}
	for topic := range helpTopics() {
		if !strings.Contains(errb.String(), topic) {
			t.Errorf("jsctl help bogus: stderr %q does not list the topic %q", errb.String(), topic)
		}
	}
	if len(topicNames()) != len(helpTopics()) {
		t.Errorf("topicNames() %q and helpTopics() disagree", topicNames())
	}
}

// TestMissingArgumentsNamedFirst: every command of the model with a
// required argument, run without any, names the first missing argument,
// before anything its own checks would ask for (a time, a flag, a name's
// syntax).
func TestMissingArgumentsNamedFirst(t *testing.T) {
	p, err := newParser(&CLI{}, &Env{}, &bytes.Buffer{}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var walk func(node *kong.Node)
	walk = func(node *kong.Node) {
		for _, c := range node.Children {
			if c.Hidden {
				continue
			}
			walk(c)
			if len(c.Children) > 0 || len(c.Positional) == 0 || !c.Positional[0].Required {
				continue
			}
			n++
			code, _, stderr := runCLI(strings.Fields(c.Path())...)
			want := `expected "<` + c.Positional[0].Name
			if code != usageExitCodeOf(c) || !strings.Contains(stderr, want) {
				t.Errorf("jsctl %s: exit %d, stderr %q; want exit %d naming %s>", c.Path(), code, stderr, usageExitCodeOf(c), want)
			}
		}
	}
	walk(p.Model.Node)
	if n < 10 {
		t.Fatalf("only %d commands with required arguments found", n)
	}
}

// usageExitCodeOf is a command's exit code for bad usage: 2, or 3
// (UNKNOWN) for consumer check.
func usageExitCodeOf(n *kong.Node) int {
	if n.Path() == "consumer check" {
		return 3
	}
	return ExitUsage
}

// TestFlagSuggestionsByPrefix: a mistyped flag that begins a flag's name
// is offered only the flags it begins, on stderr and on check's status
// line; a word that begins none keeps kong's suggestions.
func TestFlagSuggestionsByPrefix(t *testing.T) {
	_, stdout, stderr := runCLI("consumer", "check", "ORDERS", "--al")
	for _, s := range []string{stdout, stderr} {
		if !strings.Contains(s, `unknown flag --al, did you mean "--all"?`) || strings.Contains(s, "--tz") {
			t.Errorf("consumer check ORDERS --al: %q", s)
		}
	}
	code, _, stderr := runCLI("consumr", "ls")
	if code != ExitUsage || !strings.Contains(stderr, `"consumer", "consume"`) {
		t.Errorf("jsctl consumr ls: exit %d, %q", code, stderr)
	}
}
