package picker

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
	"github.com/jsctl/jsctl/jsutil"
)

// Text that fits the terminal: lines are made to fit (prose wrapped at
// spaces, list cells cut with an ellipsis), never cut mid-word afterwards.

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// esc shows a name or subject from the server as jsctl does everywhere
// (jsutil.Escape): control and format characters (an ESC sequence, a
// right-to-left override) escaped, never sent to the terminal.
func esc(s string) string {
	out, _ := jsutil.Escape([]byte(s), 0)
	return out
}

// safe shows text that may hold names from the server (an error, a
// notice) with its unprintable characters escaped as \uXXXX; the rest,
// backslashes included, as it is.
func safe(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == utf8.RuneError:
			b.WriteString(`\ufffd`)
		case !unicode.IsPrint(r) && r != ' ':
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// width is s's width in terminal cells (colour sequences take none).
func width(s string) int { return ansi.StringWidth(s) }

// fit cuts s to w cells with an ellipsis when it is wider.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	return ansi.Truncate(s, w, "…")
}

// padRight and padLeft fill s with spaces to w cells.
func padRight(s string, w int) string { return s + strings.Repeat(" ", max(w-width(s), 0)) }
func padLeft(s string, w int) string  { return strings.Repeat(" ", max(w-width(s), 0)) + s }

// wrap breaks prose into lines of at most w cells at spaces; the lines
// after the first start with indent. A word wider than a line is broken
// (nothing is lost).
func wrap(s string, w int, indent string) []string {
	w = max(w, 1)
	if width(s) <= w {
		return []string{s}
	}
	iw := width(indent)
	if iw >= w {
		indent, iw = "", 0
	}
	var lines []string
	var line strings.Builder
	lineW, empty := 0, true
	newLine := func() {
		lines = append(lines, line.String())
		line.Reset()
		line.WriteString(indent)
		lineW, empty = iw, true
	}
	for _, word := range strings.Split(s, " ") {
		ww := width(word)
		if !empty {
			if lineW+1+ww <= w {
				line.WriteString(" ")
				lineW++
			} else {
				newLine()
			}
		}
		for lineW+ww > w {
			head := ansi.Truncate(word, w-lineW, "")
			if head == "" { // a wide character on a one-cell line
				head = string([]rune(word)[:1])
			}
			line.WriteString(head)
			word = ansi.TruncateLeft(word, width(head), "")
			ww = width(word)
			newLine()
		}
		line.WriteString(word)
		lineW += ww
		empty = false
	}
	return append(lines, line.String())
}

// flow puts pieces on lines of at most w cells, two spaces apart; a piece
// wider than a line is wrapped.
func flow(pieces []string, w int) []string {
	var lines []string
	line := ""
	for _, p := range pieces {
		if p == "" {
			continue
		}
		switch {
		case line == "":
			line = p
		case width(line)+2+width(p) <= w:
			line += "  " + p
		default:
			lines = append(lines, line)
			line = p
		}
		if width(line) > w {
			parts := wrap(line, w, "  ")
			lines = append(lines, parts[:len(parts)-1]...)
			line = parts[len(parts)-1]
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
