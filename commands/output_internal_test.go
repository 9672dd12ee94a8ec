package commands

import (
	"bytes"
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

// TestTableFitsEightyColumns: without --wide every table fits 80 columns,
// whatever its cells (long names, long free text, many columns): the
// wideOnly columns are left out, the cutToFit ones shortened, and what is
// still too wide is printed as several tables with every other cell whole.
// With --wide every column and every cell is printed whole.
func TestTableFitsEightyColumns(t *testing.T) {
	long := strings.Repeat("x", 30)
	headers := []string{"CONSUMER", "TYPE", "DELIVERED", "ACK FLOOR", "EXTRA", "PREVIEW"}
	row := []string{"billing-" + long, "pull", "123456789", "123456780", "secondary", strings.Repeat("p", 120)}
	for _, c := range []struct {
		name string
		opts []TableOption
	}{
		{"no options", nil},
		{"wide-only and cut", []TableOption{wideOnly("EXTRA"), cutToFit("PREVIEW")}},
	} {
		var b bytes.Buffer
		if err := (&Printer{W: &b}).Table(headers, [][]string{row, row}, c.opts...); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(b.String(), "\n") {
			if textWidth(l) > 80 {
				t.Errorf("%s: a line of %d columns: %q", c.name, textWidth(l), l)
			}
		}
		for _, cell := range row[:4] {
			if !strings.Contains(b.String(), cell) {
				t.Errorf("%s: %q was lost:\n%s", c.name, cell, b.String())
			}
		}
		if c.opts != nil && strings.Contains(b.String(), "EXTRA") {
			t.Errorf("%s: the wide-only column is printed:\n%s", c.name, b.String())
		}
		b.Reset()
		if err := (&Printer{W: &b, Wide: true}).Table(headers, [][]string{row}, c.opts...); err != nil {
			t.Fatal(err)
		}
		for _, cell := range append(append([]string{}, headers...), row...) {
			if !strings.Contains(b.String(), cell) {
				t.Errorf("%s, --wide: %q is missing:\n%s", c.name, cell, b.String())
			}
		}
	}
}
