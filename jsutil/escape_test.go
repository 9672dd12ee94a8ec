package jsutil

import (
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	for _, c := range []struct {
		in, want string
		max      int
		cut      bool
	}{
		{in: "orders.eu 42", want: "orders.eu 42"},
		{in: "a\\b", want: `a\\b`},
		{in: "line\nnext\ttab\rcr", want: `line\nnext\ttab\rcr`},
		{in: "nul\x00bell\x07", want: `nul\u0000bell\u0007`},
		{in: "bad\xff\xfe", want: `bad\xff\xfe`},
		{in: "zürich ✓", want: "zürich ✓"},
		{in: "\u200b", want: `\u200b`},
		{in: "\U000e0001", want: `\U000e0001`},
		{in: "abcdef", max: 3, want: "abc", cut: true},
		{in: "abc", max: 3, want: "abc"},
	} {
		got, cut := Escape([]byte(c.in), c.max)
		if got != c.want || cut != c.cut {
			t.Errorf("Escape(%q, %d) = %q, %v; want %q, %v", c.in, c.max, got, cut, c.want, c.cut)
		}
	}
}

// unescape reverses Escape, to show that it loses nothing.
func unescape(s string) ([]byte, bool) {
	var out []byte
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			out = append(out, s[i])
			continue
		}
		if i+1 >= len(s) {
			return nil, false
		}
		i++
		switch s[i] {
		case '\\':
			out = append(out, '\\')
		case 'n':
			out = append(out, '\n')
		case 't':
			out = append(out, '\t')
		case 'r':
			out = append(out, '\r')
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[i]]
			if i+n >= len(s) {
				return nil, false
			}
			v, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32)
			if err != nil {
				return nil, false
			}
			if n == 2 {
				out = append(out, byte(v))
			} else {
				out = utf8.AppendRune(out, rune(v))
			}
			i += n
		default:
			return nil, false
		}
	}
	return out, true
}

func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "plain", "a\\b\n", "\x00\xff", "zürich", "\u2028\u00ad", "\\x41"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, cut := Escape(data, 0)
		if cut {
			t.Fatalf("Escape cut without a limit")
		}
		if !utf8.ValidString(got) {
			t.Fatalf("Escape(%q) = %q is not UTF-8", data, got)
		}
		if i := strings.IndexFunc(got, func(r rune) bool { return !unicode.IsPrint(r) }); i >= 0 {
			t.Fatalf("Escape(%q) = %q keeps an unprintable character at %d", data, got, i)
		}
		back, ok := unescape(got)
		if !ok || string(back) != string(data) {
			t.Fatalf("Escape(%q) = %q does not reverse (got %q)", data, got, back)
		}
	})
}
