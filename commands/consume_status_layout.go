package commands

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/term"
)

// statusWidthDefault is the width assumed when the terminal's is unknown.
const statusWidthDefault = 80

// statusOverhead is what the progress bar draws around the description: the
// spinner and a blank before it, two blanks after (see progressbar's
// renderProgressBar for a bar of unknown length), and one column kept free
// so that the cursor never sits past the last column (some terminals wrap
// there).
const statusOverhead = 5

// statusFields are the values of consume's status line.
type statusFields struct {
	Processed, Duplicates, Failed, Busy int
	Rate                                float64
	Elapsed                             time.Duration
	Pending, Lag                        uint64
}

// statusLine lays the fields out in at most width columns (the terminal's;
// the progress bar's own columns are taken off). When the full line does
// not fit, the least important fields go first: elapsed time, lag, busy,
// duplicates, pending, rate; processed and failed stay, and if even those
// do not fit the text is cut at a character boundary with "…". A status
// line that wraps scrolls the terminal on every redraw.
func statusLine(f statusFields, width int) string {
	if width <= 0 {
		width = statusWidthDefault
	}
	room := width - statusOverhead
	type item struct {
		group int // items of one group are joined by ", ", groups by " · "
		text  string
		drop  int // order of dropping: 1 first; 0 never
	}
	items := []item{
		{0, fmt.Sprintf("processed %d", f.Processed), 0},
		{0, fmt.Sprintf("duplicates %d", f.Duplicates), 4},
		{0, fmt.Sprintf("failed %d", f.Failed), 0},
		{0, fmt.Sprintf("busy %d", f.Busy), 3},
		{1, fmt.Sprintf("%.1f msg/s", f.Rate), 6},
		{2, f.Elapsed.Round(time.Second).String(), 1},
		{3, fmt.Sprintf("pending %d", f.Pending), 5},
		{3, fmt.Sprintf("lag %d", f.Lag), 2},
	}
	render := func(dropped int) string {
		var b strings.Builder
		group := -1
		for _, it := range items {
			if it.drop != 0 && it.drop <= dropped {
				continue
			}
			switch {
			case group == -1:
			case it.group != group:
				b.WriteString(" · ")
			default:
				b.WriteString(", ")
			}
			group = it.group
			b.WriteString(it.text)
		}
		return b.String()
	}
	for dropped := 0; dropped <= 6; dropped++ {
		if s := render(dropped); utf8.RuneCountInString(s) <= room {
			return s
		}
	}
	return cutRunes(render(6), room)
}

// cutRunes shortens s to at most n characters, the last one "…" when cut,
// never in the middle of a multi-byte character.
func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	i, count := 0, 0
	for i = range s {
		if count == n-1 {
			break
		}
		count++
	}
	return s[:i] + "…"
}

// terminalWidth is the width of the terminal w draws on, or
// statusWidthDefault when it is unknown (not a file, not a terminal, a
// terminal reporting 0 columns).
func terminalWidth(w io.Writer) int {
	if f, ok := terminalOf(w).(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return cols
		}
	}
	return statusWidthDefault
}
