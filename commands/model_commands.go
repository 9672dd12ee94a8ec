package commands

import (
	"io"
	"strings"

	"github.com/alecthomas/kong"
)

// CommandInfo is one command of the model that runs something: its path
// ("consumer reset") and its own flags and arguments (names and help), for
// tests that must cover every command (internal/trustmatrix).
type CommandInfo struct {
	Path  string
	Flags []FlagInfo
}

// FlagInfo is a flag (Name without dashes) or a positional argument
// (Positional set) of a command.
type FlagInfo struct {
	Name, Help string
	Positional bool
}

// Commands lists every command of the full model that runs something,
// hidden ones included, in the model's order.
func Commands() ([]CommandInfo, error) {
	cli := &CLI{}
	env := &Env{Globals: &cli.Globals, Stdout: io.Discard, Stderr: io.Discard}
	parser, err := newParser(cli, env, io.Discard, io.Discard)
	if err != nil {
		return nil, err
	}
	var out []CommandInfo
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, c := range n.Children {
			if c.Type != kong.CommandNode {
				continue
			}
			if hasRun(c) {
				info := CommandInfo{Path: strings.TrimPrefix(c.FullPath(), "jsctl ")}
				for _, f := range c.Flags {
					info.Flags = append(info.Flags, FlagInfo{Name: f.Name, Help: f.Help})
				}
				for _, p := range c.Positional {
					info.Flags = append(info.Flags, FlagInfo{Name: p.Name, Help: p.Help, Positional: true})
				}
				out = append(out, info)
			}
			walk(c)
		}
	}
	walk(parser.Model.Node)
	return out, nil
}
