package commands

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/schollz/progressbar/v3"
)

// The status line fits the terminal: the least important fields go first,
// and the line as the progress bar draws it (spinner and padding included)
// stays within the width, so it never wraps.
func TestConsumeStatusLayout(t *testing.T) {
	f := statusFields{Processed: 12345, Duplicates: 12, Failed: 3, Busy: 1, Rate: 1234.5, Elapsed: 83*time.Minute + 20*time.Second, Pending: 67890, Lag: 67901}
	cases := []struct {
		width int
		want  string
	}{
		{200, "processed 12345, duplicates 12, failed 3, busy 1 · 1234.5 msg/s · 1h23m20s · pending 67890, lag 67901"},
		{80, "processed 12345, duplicates 12, failed 3 · 1234.5 msg/s · pending 67890"},
		{60, "processed 12345, failed 3 · 1234.5 msg/s"},
		{40, "processed 12345, failed 3"},
		{20, "processed 1234…"},
		{0, "processed 12345, duplicates 12, failed 3 · 1234.5 msg/s · pending 67890"}, // unknown: 80
	}
	for _, c := range cases {
		got := statusLine(f, c.width)
		if got != c.want {
			t.Errorf("width %d:\n got %q\nwant %q", c.width, got, c.want)
		}
		width := c.width
		if width == 0 {
			width = statusWidthDefault
		}
		// Drawn as consume draws it.
		var buf bytes.Buffer
		bar := progressbar.NewOptions(-1, progressbar.OptionSetWriter(&buf), progressbar.OptionSpinnerType(14),
			progressbar.OptionSetSpinnerChangeInterval(0), progressbar.OptionSetElapsedTime(false))
		bar.Describe(got)
		drawn := buf.String()
		if i := strings.LastIndex(drawn, "\r"); i >= 0 {
			drawn = drawn[i+1:]
		}
		drawn = strings.TrimSuffix(drawn, "\033[0K")
		if n := utf8.RuneCountInString(drawn); n >= width {
			t.Errorf("width %d: drawn line is %d columns: %q", c.width, n, drawn)
		}
	}
	// A small terminal, and the smallest one: cut, at character boundaries.
	for _, w := range []int{statusOverhead + 1, statusOverhead, 1} {
		if got := statusLine(f, w); !utf8.ValidString(got) || utf8.RuneCountInString(got) > max(w-statusOverhead, 0) {
			t.Errorf("width %d: %q", w, got)
		}
	}
}

// cutRunes never cuts a multi-byte character.
func TestCutRunes(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"a · b · c", 4, "a ·…"},
		{"a · b · c", 3, "a …"},
		{"··········", 3, "··…"},
		{"abc", 3, "abc"},
		{"abcd", 1, "…"},
		{"abcd", 0, ""},
	} {
		if got := cutRunes(c.s, c.n); got != c.want || !utf8.ValidString(got) {
			t.Errorf("cutRunes(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
