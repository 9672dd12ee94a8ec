package commands

import (
	"bytes"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/alecthomas/kong"
	"golang.org/x/term"
)

// helpWidthMax is the width help and help topics are wrapped to: the
// width of a terminal that is narrower, this otherwise (a pipe, a file, a
// wider terminal, where text wider than this is hard to read anyway).
const helpWidthMax = 80

// helpWidth is the width help written to w wraps to.
func helpWidth(w io.Writer) int {
	if f, ok := terminalOf(w).(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 && cols < helpWidthMax {
			return max(cols, 40)
		}
	}
	return helpWidthMax
}

// helpPrinter is kong's help printer at width columns: the commands
// before the flags, the root's examples, time forms and exit codes after
// the commands, and every line, examples and tables included, fitted to
// width (fitLines).
func helpPrinter(width int) kong.HelpPrinter {
	return func(opts kong.HelpOptions, ctx *kong.Context) error {
		opts.WrapUpperBound = width
		opts.FlagsLast = true
		app := ctx.Model
		out := ctx.Stdout
		var buf bytes.Buffer
		ctx.Stdout = &buf
		root := ctx.Selected() == nil && !opts.Summary
		full := app.Help
		var rest string
		if root {
			app.Help, rest, _ = strings.Cut(full, "\n\n")
		}
		err := kong.DefaultHelpPrinter(opts, ctx)
		ctx.Stdout = out
		app.Help = full
		if err != nil {
			return err
		}
		text := buf.String()
		if rest != "" { // after the commands, before the flags
			before, after, found := strings.Cut(text, "\nFlags:\n")
			if found {
				text = before + "\n" + strings.TrimSpace(rest) + "\n\nFlags:\n" + after
			} else {
				text += "\n" + strings.TrimSpace(rest) + "\n"
			}
		}
		_, err = io.WriteString(out, fitLines(text, width))
		return err
	}
}

// fitLines fits text to width columns, leaving what fits alone:
//   - a paragraph of prose (lines starting at column 0) with a line too wide
//     is filled again;
//   - a block of example lines ("COMMAND   # comment") with a line too wide
//     puts each comment on its own line above its command;
//   - any other line too wide continues under its last column (a two-column
//     line such as "  --flag   what it does"), or two columns in.
func fitLines(text string, width int) string {
	lines := strings.Split(text, "\n")
	var out []string
	for i := 0; i < len(lines); {
		j := i + 1
		switch {
		case isProse(lines[i]):
			for j < len(lines) && isProse(lines[j]) && !strings.HasSuffix(lines[j-1], ":") {
				j++
			}
			out = append(out, fillProse(lines[i:j], width)...)
		case isExample(lines[i]):
			for j < len(lines) && isExample(lines[j]) && indentOf(lines[j]) == indentOf(lines[i]) {
				j++
			}
			out = append(out, fitExamples(lines[i:j], width)...)
		default:
			out = append(out, fitLine(lines[i], width)...)
		}
		i = j
	}
	return strings.Join(out, "\n")
}

func indentOf(line string) string { return line[:len(line)-len(strings.TrimLeft(line, " "))] }

// isProse reports whether line is a line of a prose paragraph: it starts
// at column 0 and is not a heading of its own ("Examples:").
func isProse(line string) bool {
	return line != "" && line[0] != ' ' && !strings.Contains(line, "   ")
}

func isExample(line string) bool {
	cmd, _, ok := strings.Cut(line, " # ")
	return ok && strings.TrimSpace(cmd) != "" && line[0] == ' '
}

// fillProse fills a paragraph again when one of its lines is too wide; a
// paragraph's last line may end with ":" (a heading of what follows).
func fillProse(par []string, width int) []string {
	wide := false
	for _, l := range par {
		wide = wide || textWidth(l) > width
	}
	if !wide {
		return par
	}
	return wrapAt(strings.Join(par, " "), "", width)
}

func fitExamples(block []string, width int) []string {
	wide := false
	for _, l := range block {
		wide = wide || textWidth(l) > width
	}
	if !wide {
		return block
	}
	var out []string
	for _, l := range block {
		indent := indentOf(l)
		cmd, comment, _ := strings.Cut(strings.TrimLeft(l, " "), " # ")
		out = append(out, wrapAt(indent+"# "+strings.TrimSpace(comment), indent+"# ", width)...)
		out = append(out, fitLine(indent+strings.TrimSpace(cmd), width)...)
	}
	return out
}

func fitLine(line string, width int) []string {
	if textWidth(line) <= width {
		return []string{line}
	}
	indent := indentOf(line)
	if strings.HasPrefix(line[len(indent):], "jsctl ") { // a command line stays one command
		out := wrapAt(line, indent+"    ", width-2)
		for i := range out[:len(out)-1] {
			out[i] += " \\"
		}
		return out
	}
	cont := indent + "  "
	if len(indent) >= width/4 {
		cont = indent
	}
	// the last column that starts after two spaces, in the left half
	for i := len(indent); i+2 < len(line); i++ {
		if line[i] == ' ' && line[i+1] == ' ' && line[i+2] != ' ' && i > len(indent) {
			if col := textWidth(line[:i+2]); col <= width/2 {
				cont = strings.Repeat(" ", col)
			}
		}
	}
	return wrapAt(line, cont, width)
}

// wrapAt breaks line at spaces so that no piece is wider than width,
// keeping the spacing of what stays on a line, and continuing on lines
// that start with cont. A word wider than the room left is cut.
func wrapAt(line, cont string, width int) []string {
	var out []string
	for textWidth(line) > width {
		// break at the last space that fits, outside "quotes" if there is one
		cut, cols, lastSpace, lastOutside := 0, 0, -1, -1
		start, quoted := len(indentOf(line)), false
		for cut < len(line) && cols <= width {
			if line[cut] == ' ' && cut > start {
				lastSpace = cut
				if !quoted {
					lastOutside = cut
				}
			}
			if line[cut] == '"' {
				quoted = !quoted
			}
			if cols == width {
				break
			}
			_, size := utf8.DecodeRuneInString(line[cut:])
			cut += size
			cols++
		}
		switch {
		case lastOutside > start:
			cut = lastOutside
		case lastSpace > start:
			cut = lastSpace
		}
		head := strings.TrimRight(line[:cut], " ")
		tail := strings.TrimLeft(line[cut:], " ")
		out = append(out, head)
		if tail == "" {
			return out
		}
		line = cont + tail
		if textWidth(cont) >= width-10 {
			cont = cont[:len(cont)/2]
		}
	}
	return append(out, line)
}

// textWidth is the number of columns s takes (one per rune: jsctl's
// texts hold no wide characters).
func textWidth(s string) int { return utf8.RuneCountInString(s) }

// cutWidth is the longest prefix of s at most n columns wide.
func cutWidth(s string, n int) string {
	i, cols := 0, 0
	for i < len(s) && cols < n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		cols++
	}
	return s[:i]
}
