package commands

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// Printer writes command output: tables and lines for people, JSON for
// scripts.
type Printer struct {
	W    io.Writer
	JSON bool
	Loc  *time.Location
	// Wide keeps full precision in table cells (--wide).
	Wide bool
	// Now is the clock deciding which day is today for TableTime (time.Now
	// when nil).
	Now func() time.Time
	// Width, when set, is the width tables must fit (a full-screen UI
	// prints into it): a wider table is printed as several, each with
	// the first column and as many of the others as fit, so no column is
	// lost.
	Width int
}

// PrintJSON writes v as indented JSON followed by a newline.
func (p *Printer) PrintJSON(v any) error {
	enc := json.NewEncoder(p.W)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// PrintJSONLine writes v as one line of JSON.
func (p *Printer) PrintJSONLine(v any) error {
	enc := json.NewEncoder(p.W)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// Printf writes formatted text, made safe for a terminal by TermSafe: a
// stream, consumer or subject name holding an ESC sequence (the server
// accepts such names) cannot drive the terminal, wherever a command prints
// it.
func (p *Printer) Printf(format string, args ...any) {
	_, _ = io.WriteString(p.W, TermSafe(fmt.Sprintf(format, args...)))
}

// TermSafe escapes the control characters of s other than newline and tab
// as \uXXXX, and bytes that are not UTF-8 as \xXX (as Escape does); it
// leaves everything else, backslashes included, as it is. Text already
// made safe by Escape passes unchanged.
func TermSafe(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || (unicode.IsControl(r) && r != '\n' && r != '\t') {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsControl(r) && r != '\n' && r != '\t':
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Table writes rows under headers as a plain, aligned table. Cells are
// escaped as payload previews are, so a subject or name holding control
// characters (an ESC sequence, a newline) cannot garble the terminal.
func (p *Printer) Table(headers []string, rows [][]string) error {
	if p.Width > 0 && len(headers) > 2 {
		return p.fittedTable(headers, rows)
	}
	var buf bytes.Buffer
	t := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Symbols: tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{
				Separators: tw.Separators{BetweenRows: tw.Off, BetweenColumns: tw.Off},
				Lines:      tw.Lines{ShowHeaderLine: tw.Off},
			},
		})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithTrimSpace(tw.On),
	)
	t.Header(headers)
	safe := make([][]string, len(rows))
	for i, row := range rows {
		safe[i] = make([]string, len(row))
		for j, cell := range row {
			safe[i][j] = Escape(cell)
		}
	}
	if err := t.Bulk(safe); err != nil {
		return err
	}
	if err := t.Render(); err != nil {
		return err
	}
	// The renderer pads every cell; trailing blanks only get in the way.
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if line == "" {
			continue
		}
		trimmed := strings.TrimRight(line, " \n")
		if strings.HasSuffix(line, "\n") {
			trimmed += "\n"
		}
		if _, err := io.WriteString(p.W, trimmed); err != nil {
			return err
		}
	}
	return nil
}

// fittedTable prints the table as Table does when it fits p.Width, else
// as several tables, each with the first column and the next columns
// that fit, one after the other.
func (p *Printer) fittedTable(headers []string, rows [][]string) error {
	render := func(cols []int) (string, int, error) {
		var buf bytes.Buffer
		hs := make([]string, len(cols))
		for i, c := range cols {
			hs[i] = headers[c]
		}
		rs := make([][]string, len(rows))
		for r, row := range rows {
			rs[r] = make([]string, len(cols))
			for i, c := range cols {
				if c < len(row) {
					rs[r][i] = row[c]
				}
			}
		}
		if err := (&Printer{W: &buf}).Table(hs, rs); err != nil {
			return "", 0, err
		}
		w := 0
		for _, l := range strings.Split(buf.String(), "\n") {
			w = max(w, utf8.RuneCountInString(l))
		}
		return buf.String(), w, nil
	}
	var out []string
	group := []int{0}
	for c := 1; c <= len(headers); c++ {
		if c < len(headers) {
			next := append(append([]int(nil), group...), c)
			_, w, err := render(next)
			if err != nil {
				return err
			}
			if w <= p.Width || len(group) == 1 {
				group = next
				continue
			}
		}
		text, _, err := render(group)
		if err != nil {
			return err
		}
		out = append(out, text)
		group = []int{0, c}
	}
	_, err := io.WriteString(p.W, strings.Join(out, "\n"))
	return err
}

// Time formats t for people in the printer's zone.
func (p *Printer) Time(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.In(p.Loc).Format("2006-01-02 15:04:05.000000000 MST")
}

// JSONTime formats t for JSON: RFC 3339 with nanoseconds, in UTC.
func JSONTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// Escape renders s safely for a terminal as Preview does, without cutting.
// It is also how consume passes keys to commands (JSCTL_KEY, and "key" in
// batches): always valid in an environment variable, and reversible (see
// jsutil.Escape).
func Escape(s string) string {
	out, _ := jsutil.Escape([]byte(s), 0)
	return out
}

// Preview renders up to n bytes of a payload safely for a terminal:
// escaped as Escape does, with a note when cut.
func Preview(data []byte, n int) string {
	cut := false
	if len(data) > n {
		data, cut = data[:n], true
	}
	out, _ := jsutil.Escape(data, 0)
	if cut {
		out += "…"
	}
	return out
}

// PreviewCell is Preview for a table cell: up to n bytes, with a note when
// cut, left unescaped because Table escapes every cell (Preview there would
// escape twice, printing \\u001b for \u001b).
func PreviewCell(data []byte, n int) string {
	if len(data) > n {
		return string(data[:n]) + "…"
	}
	return string(data)
}

// DurationText prints a duration as --retention and the other day-aware
// flags read it: "7d", "1d12h0m0s", "30s".
func DurationText(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d >= day && d%day == 0:
		return fmt.Sprintf("%dd", d/day)
	case d >= day:
		return fmt.Sprintf("%dd%v", d/day, d%day)
	}
	return d.String()
}

// stdoutWriter remembers the first error writing standard output, so that a
// command whose text went nowhere (a full disk, a closed pipe) does not
// exit 0: Printer.Printf, like fmt.Fprintf, drops the error of each write.
type stdoutWriter struct {
	w   io.Writer
	err error
}

func (s *stdoutWriter) Write(b []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(b)
	if err != nil {
		s.err = fmt.Errorf("write standard output: %w", err)
		return n, s.err
	}
	return n, nil
}

// terminalOf is the writer under w's write-error tracking: a terminal UI
// must see the *os.File itself to know it draws on a terminal (its size,
// raw mode).
func terminalOf(w io.Writer) io.Writer {
	if s, ok := w.(*stdoutWriter); ok {
		return s.w
	}
	return w
}
