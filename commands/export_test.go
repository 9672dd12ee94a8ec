package commands

import (
	"io"
	"slices"
	"strings"

	"github.com/alecthomas/kong"
)

// ChangingCommands lists, from the command model, every command that
// changes state as the change contract defines them: those with
// --dry-run (changeFlags, oneChangeFlags). TestChangeContract must have a
// case, and so an audited change, for each: a new changing command cannot
// be left out.
func ChangingCommands() []string {
	p, err := newParser(&CLI{}, &Env{}, io.Discard, io.Discard)
	if err != nil {
		panic(err)
	}
	var out []string
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, f := range n.Flags {
			if f.Name == "dry-run" {
				out = append(out, strings.TrimPrefix(n.FullPath(), "jsctl "))
			}
		}
		for _, c := range n.Children {
			if !c.Hidden {
				walk(c)
			}
		}
	}
	walk(p.Model.Node)
	slices.Sort(out)
	return out
}
