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

// manNoFillWidth is how wide a no-fill line of the page may be: man pages
// are read at 80 columns and indent a section's text by 7.
const manNoFillWidth = 80 - 7

// manText turns a help text (go/doc layout: prose paragraphs, indented
// examples and tables) into roff: prose is filled to the reader's width,
// indented lines stay as written (no-fill), fitted to manNoFillWidth.
func manText(text string) string {
	var b strings.Builder
	lines := strings.Split(strings.TrimSpace(text), "\n")
	for i := 0; i < len(lines); {
		switch l := lines[i]; {
		case strings.TrimSpace(l) == "":
			i++
		case l[0] != ' ':
			b.WriteString(".PP\n")
			for ; i < len(lines) && lines[i] != "" && lines[i][0] != ' '; i++ {
				b.WriteString(manBreakable(manEscape(strings.TrimSpace(lines[i]))) + "\n")
			}
		default:
			var block []string
			for ; i < len(lines) && (lines[i] == "" || lines[i][0] == ' '); i++ {
				block = append(block, lines[i])
			}
			for len(block) > 0 && block[len(block)-1] == "" {
				block = block[:len(block)-1]
			}
			b.WriteString(".PP\n.nf\n" + manEscape(fitLines(strings.Join(block, "\n"), manNoFillWidth)) + "\n.fi\n")
		}
	}
	return b.String()
}

// manBreakable lets roff break a long word of filled prose (a JSON
// shape such as {"stream","consumer",...}) after its commas: roff breaks
// lines only at spaces, and a word wider than the page overflows it.
func manBreakable(line string) string {
	words := strings.Split(line, " ")
	for i, w := range words {
		if textWidth(w) > 30 {
			words[i] = strings.ReplaceAll(w, ",", `,\:`)
		}
	}
	return strings.Join(words, " ")
}

// writeMan writes the manual page of app.
func writeMan(w io.Writer, app *kong.Application) error {
	var b strings.Builder
	b.WriteString(".TH JSCTL 1 \"\" \"jsctl\" \"User Commands\"\n.nh\n") // no hyphenation: names and flags stay whole
	b.WriteString(".SH NAME\njsctl \\- control\\-plane CLI for NATS JetStream\n")
	b.WriteString(".SH SYNOPSIS\n.B jsctl\n.I command\n[\\fIflags\\fR]\n")
	b.WriteString(".SH DESCRIPTION\n" + manText(app.Help))
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
	b.WriteString(".SH HANDLERS\n" + manText(consumeHandlerHelp))
	b.WriteString(".SH EXIT STATUS\n" + manText(exitCodesHelp))
	b.WriteString(".SH SEE ALSO\nThe manual pages under docs/ of the jsctl repository; \\fBjsctl help\\fR \\fItopic\\fR for times, exit\\-codes, connecting, permissions and handler.\n")
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
		b.WriteString(manText(n.Detail))
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
