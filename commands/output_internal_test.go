package commands

import (
	"strings"
	"testing"
)

// TermSafe escapes what could drive a terminal and nothing else.
func TestTermSafe(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text\n\twith tab\n", "plain text\n\twith tab\n"},
		{"Stream A\x1b[31mB\n", `Stream A\u001b[31mB` + "\n"},
		{"bell\a cr\r del\x7f c1\u009b", `bell\u0007 cr\u000d del\u007f c1\u009b`},
		{"bad \xff utf8", `bad \xff utf8`},
		{`already \u001b escaped \\`, `already \u001b escaped \\`},
		{"wide ✓ and \ufffd kept", "wide ✓ and \ufffd kept"},
	} {
		if got := TermSafe(tc.in); got != tc.want {
			t.Errorf("TermSafe(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzTermSafe: the result never holds a control character other than
// newline and tab, nor invalid UTF-8, and clean text passes unchanged.
func FuzzTermSafe(f *testing.F) {
	f.Add("Stream A\x1b[31mB\n")
	f.Add("\xff\xfe\r\n")
	f.Fuzz(func(t *testing.T, s string) {
		out := TermSafe(s)
		for i, r := range out {
			if r == '\ufffd' && !strings.ContainsRune(s, '\ufffd') || r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f {
				t.Fatalf("TermSafe(%q) = %q: rune %q at %d", s, out, r, i)
			}
		}
		if TermSafe(out) != out {
			t.Fatalf("TermSafe is not idempotent on %q", s)
		}
	})
}
