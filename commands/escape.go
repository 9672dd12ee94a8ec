package commands

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape makes s safe to print and to pass in an environment variable:
// printable characters stay as they are, a backslash becomes \\, and every
// other byte (control characters, NUL, invalid UTF-8) becomes \xHH. It is
// how consume passes keys to commands (JSCTL_KEY, and "key" in batches), and
// it can be reversed exactly.
func Escape(s string) string {
	if plain(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == utf8.RuneError && size <= 1, !unicode.IsPrint(r):
			for k := range size {
				fmt.Fprintf(&b, `\x%02x`, s[i+k])
			}
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// plain reports whether s is printable ASCII without backslashes, which
// Escape leaves as it is.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '\\' {
			return false
		}
	}
	return true
}
