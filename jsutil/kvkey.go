package jsutil

import (
	"fmt"
	"strconv"
	"strings"
)

// KeyToken encodes any string (a stream, consumer or scope name, a header
// value) as one token of a KV key: ASCII letters, digits, '-' and '_' are
// kept; every other byte becomes "=XX" (hex). The empty string becomes "=".
// The encoding is reversible with KeyTokenDecode and never contains '.',
// so tokens can be joined with '.' into keys and filtered with wildcards.
func KeyToken(s string) string {
	if s == "" {
		return "="
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "=%02X", c)
		}
	}
	return b.String()
}

// KeyTokenDecode reverses KeyToken.
func KeyTokenDecode(tok string) (string, error) {
	if tok == "=" {
		return "", nil
	}
	var b strings.Builder
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if c != '=' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(tok) {
			return "", Errorf(ErrBadInput, "bad key token %q: truncated escape", tok)
		}
		v, err := strconv.ParseUint(tok[i+1:i+3], 16, 8)
		if err != nil {
			return "", Errorf(ErrBadInput, "bad key token %q: %w", tok, err)
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), nil
}
