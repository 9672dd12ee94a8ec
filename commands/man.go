package commands

import (
	"fmt"
	"io"
	"strings"

	"github.com/alecthomas/kong"
)

// ManCmd prints jsctl's manual page, made from the command model.
type ManCmd struct{}

// Help is the long help of man.
func (ManCmd) Help() string {
	return `Prints jsctl's manual page in roff (man(7)): every command with its help,
arguments and flags, the global flags, the environment, the exit codes. It is
made from the same command model as --help, so it is never out of date; the
copy under docs/man/ is checked against it by the tests.

Examples:
  jsctl man | man -l -
  jsctl man > ~/.local/share/man/man1/jsctl.1     # then: man jsctl`
}

// Run prints the page.
func (c *ManCmd) Run(kctx *kong.Context, env *Env) error {
	return writeMan(env.Stdout, kctx.Model)
}

// manEscape escapes text for roff: backslashes, and a leading dot or quote.
func manEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			l = `\&` + l
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// writeMan writes the manual page of app.
func writeMan(w io.Writer, app *kong.Application) error {
	var b strings.Builder
	b.WriteString(".TH JSCTL 1 \"\" \"jsctl\" \"User Commands\"\n")
	b.WriteString(".SH NAME\njsctl \\- control\\-plane CLI for NATS JetStream\n")
	b.WriteString(".SH SYNOPSIS\n.B jsctl\n.I command\n[\\fIflags\\fR]\n")
	b.WriteString(".SH DESCRIPTION\n.nf\n" + manEscape(strings.TrimSpace(app.Help)) + "\n.fi\n")
	b.WriteString(".SH COMMANDS\n")
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, c := range n.Children {
			if c.Hidden {
				continue
			}
			if len(c.Children) > 0 && c.Type == kong.CommandNode && !hasRun(c) {
				walk(c)
				continue
			}
			manCommand(&b, c)
			walk(c)
		}
	}
	walk(app.Node)
	b.WriteString(".SH GLOBAL FLAGS\n")
	for _, f := range app.Flags {
		manFlag(&b, f)
	}
	b.WriteString(".SH ENVIRONMENT\n")
	for _, f := range app.Flags {
		for _, e := range f.Envs {
			fmt.Fprintf(&b, ".TP\n.B %s\n%s (as \\-\\-%s)\n", manEscape(e), manEscape(f.Help), manEscape(f.Name))
		}
	}
	b.WriteString(".SH EXIT STATUS\n.nf\n" + manEscape(exitCodesHelp) + "\n.fi\n")
	b.WriteString(".SH SEE ALSO\nThe manual pages under docs/ of the jsctl repository; \\fBjsctl help\\fR \\fItopic\\fR for times, exit\\-codes, connecting and permissions.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// hasRun reports whether a command node runs something itself (a group
// like "consumer" only holds commands).
func hasRun(n *kong.Node) bool {
	return n.Target.IsValid() && n.Target.CanAddr() && n.Target.Addr().MethodByName("Run").IsValid()
}

func manCommand(b *strings.Builder, n *kong.Node) {
	fmt.Fprintf(b, ".SS \"jsctl %s\"\n", manEscape(n.Summary()))
	if n.Help != "" {
		fmt.Fprintf(b, "%s\n", manEscape(n.Help))
	}
	if n.Detail != "" {
		fmt.Fprintf(b, ".PP\n.nf\n%s\n.fi\n", manEscape(strings.TrimSpace(n.Detail)))
	}
	for _, p := range n.Positional {
		fmt.Fprintf(b, ".TP\n.I %s\n%s\n", manEscape(p.Summary()), manEscape(p.Help))
	}
	for _, f := range n.Flags {
		if f.Hidden {
			continue
		}
		manFlag(b, f)
	}
}

func manFlag(b *strings.Builder, f *kong.Flag) {
	if f.Hidden {
		return
	}
	name := "\\-\\-" + manEscape(f.Name)
	if f.Short != 0 {
		name = "\\-" + string(f.Short) + ", " + name
	}
	if !f.IsBool() {
		ph := f.FormatPlaceHolder()
		name += "=" + manEscape(ph)
	}
	help := f.Help
	if f.HasDefault && f.Default != "" && !f.IsBool() {
		help += " (default " + f.Default + ")"
	}
	fmt.Fprintf(b, ".TP\n.B %s\n%s\n", name, manEscape(help))
}
