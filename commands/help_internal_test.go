package commands

import (
	"bytes"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// TestHelpHasExamples checks that every command's --help, groups
// included, shows examples
// and that the top-level help documents the exit codes and time forms.
func TestHelpHasExamples(t *testing.T) {
	var out bytes.Buffer
	p, err := newParser(&CLI{}, &Env{}, &out, &out)
	if err != nil {
		t.Fatal(err)
	}
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, c := range n.Children {
			if c.Hidden {
				continue
			}
			if !strings.Contains(c.Detail, "Examples:") {
				t.Errorf("jsctl %s --help has no Examples: section (add them to its Help method)", c.Path())
			}
			walk(c)
		}
	}
	walk(p.Model.Node)
	for _, want := range []string{"Examples:", "Exit codes:", "7  permission", "2h ago"} {
		if !strings.Contains(p.Model.Help, want) {
			t.Errorf("jsctl --help lacks %q", want)
		}
	}
}
