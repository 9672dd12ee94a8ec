package jsutil

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape renders data safely for a terminal, an environment variable or a
// header value, reversibly: printable characters as they are, a backslash
// as \\, newline, tab and carriage return as \n, \t and \r, any other
// unprintable character as \uXXXX (\UXXXXXXXX beyond U+FFFF), and each byte that is not UTF-8 as \xHH.
// With max > 0 it stops once the result reaches max bytes and reports that
// it cut.
func Escape(data []byte, max int) (string, bool) {
	var b strings.Builder
	for len(data) > 0 {
		if max > 0 && b.Len() >= max {
			return b.String(), true
		}
		r, size := utf8.DecodeRune(data)
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, data[0])
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case !unicode.IsPrint(r) && r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		case !unicode.IsPrint(r):
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			b.WriteRune(r)
		}
		data = data[size:]
	}
	return b.String(), false
}
