package commands

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
	"golang.org/x/term"
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
	// NoteWidth, when set, is the width the lines under a table are
	// fitted to (Fitf): a terminal's, or $COLUMNS. In a pipe or a file,
	// without $COLUMNS, each note stays one line, for grep.
	NoteWidth int
}

// noteWidth is Printer.NoteWidth for output to w: $COLUMNS when set, the
// terminal's width when w is one, else 0 (notes are not broken).
func noteWidth(w io.Writer) int {
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return max(n, 40)
	}
	if f, ok := terminalOf(w).(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return max(cols, 40)
		}
	}
	return 0
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

// tableWidth is the width tables fit by default (without --wide): the
// width of a terminal nobody resized, of a pasted log line, of an e-mail.
const tableWidth = 80

// TableOption shapes a table to tableWidth when --wide is not given.
type TableOption func(*tableShape)

type tableShape struct {
	wideOnly map[string]bool // columns printed only with --wide
	cut      []string        // columns whose cells are shortened to fit, first first
	rename   map[string]string
}

// wideOnly names the columns a table prints only with --wide: secondary
// figures, kept in --json and --wide.
func wideOnly(headers ...string) TableOption {
	return func(s *tableShape) {
		for _, h := range headers {
			s.wideOnly[h] = true
		}
	}
}

// cutToFit names the columns of free text (a preview, a subject, a
// description) whose cells are shortened, with "…", when the table is still
// wider than tableWidth; --wide prints them whole.
func cutToFit(headers ...string) TableOption {
	return func(s *tableShape) { s.cut = append(s.cut, headers...) }
}

// narrowHeader prints header as short when --wide is not given.
func narrowHeader(header, short string) TableOption {
	return func(s *tableShape) { s.rename[header] = short }
}

// Table writes rows under headers as a plain, aligned table. Cells are
// escaped as payload previews are, so a subject or name holding control
// characters (an ESC sequence, a newline) cannot garble the terminal.
//
// Without --wide a table fits tableWidth: the wideOnly columns are left
// out, then the cutToFit columns shortened, and a table still too wide is
// printed as several (fittedTable), so no other column is lost. A printer
// with a Width (a full-screen UI) prints every column, in several tables
// when they do not fit Width.
func (p *Printer) Table(headers []string, rows [][]string, opts ...TableOption) error {
	safe := make([][]string, len(rows))
	for i, row := range rows {
		safe[i] = make([]string, len(row))
		for j, cell := range row {
			safe[i][j] = Escape(cell)
		}
	}
	width := p.Width
	if !p.Wide && width <= 0 { // a UI that gives its width shows every column
		shape := tableShape{wideOnly: map[string]bool{}, rename: map[string]string{}}
		for _, o := range opts {
			o(&shape)
		}
		headers, safe = dropColumns(headers, safe, shape.wideOnly)
		for i, h := range headers {
			if short, ok := shape.rename[h]; ok {
				headers[i] = short
			}
		}
		width = tableWidth
		safe = cutColumns(headers, safe, shape.cut, width)
		safe = cutCells(headers, safe, width)
	}
	if width > 0 && len(headers) > 2 && tableTextWidth(headers, safe) > width {
		return p.fittedTable(headers, safe, width)
	}
	return p.plainTable(headers, safe)
}

// dropColumns is the table without the columns named in drop.
func dropColumns(headers []string, rows [][]string, drop map[string]bool) ([]string, [][]string) {
	if len(drop) == 0 {
		return headers, rows
	}
	var keep []int
	var hs []string
	for i, h := range headers {
		if !drop[h] {
			keep = append(keep, i)
			hs = append(hs, h)
		}
	}
	out := make([][]string, len(rows))
	for r, row := range rows {
		for _, i := range keep {
			cell := ""
			if i < len(row) {
				cell = row[i]
			}
			out[r] = append(out[r], cell)
		}
	}
	return hs, out
}

// cutColumns shortens the cells of the cut columns, in order, until the
// table fits width or they are down to their header's width (at least 8).
func cutColumns(headers []string, rows [][]string, cut []string, width int) [][]string {
	for _, name := range cut {
		col := -1
		for i, h := range headers {
			if h == name {
				col = i
			}
		}
		over := tableTextWidth(headers, rows) - width
		if col < 0 || over <= 0 {
			continue
		}
		widest := 0
		for _, row := range rows {
			if col < len(row) {
				widest = max(widest, textWidth(row[col]))
			}
		}
		limit := max(widest-over, textWidth(headers[col]), 8)
		for _, row := range rows {
			if col < len(row) && textWidth(row[col]) > limit {
				row[col] = cutWidth(row[col], limit-1) + "…"
			}
		}
	}
	return rows
}

// cutCells is the last resort of a table without --wide: a cell so wide
// that even beside the first column alone it would not fit width is
// shortened with "…", so that fittedTable can fit every column.
func cutCells(headers []string, rows [][]string, width int) [][]string {
	if len(headers) < 2 {
		return rows
	}
	first := textWidth(headers[0])
	for _, row := range rows {
		if len(row) > 0 {
			first = max(first, textWidth(row[0]))
		}
	}
	limit := max(width-first-3, 8)
	for _, row := range rows {
		for i := 1; i < len(row); i++ {
			if textWidth(row[i]) > limit {
				row[i] = cutWidth(row[i], limit-1) + "…"
			}
		}
	}
	return rows
}

// tableTextWidth is the width plainTable prints the table in: a leading
// space, and each column as wide as its widest cell, two spaces apart.
func tableTextWidth(headers []string, rows [][]string) int {
	w := 0
	for i, h := range headers {
		col := textWidth(h)
		for _, row := range rows {
			if i < len(row) {
				col = max(col, textWidth(row[i]))
			}
		}
		if i > 0 {
			w += 2
		}
		w += col
	}
	return w + 1
}

// plainTable renders cells that are escaped already.
func (p *Printer) plainTable(headers []string, safe [][]string) error {
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

// Fitf is Printf for the lines around a table (its title, the notes under
// it): they are fitted to p.NoteWidth (fitLines), or p.Width, continuing
// under their own indent; with neither, they are printed as they are.
func (p *Printer) Fitf(format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	width := p.Width
	if width <= 0 {
		width = p.NoteWidth
	}
	if width > 0 {
		text = fitLines(text, width)
	}
	p.Printf("%s", text)
}

// fittedTable prints the table as Table does when it fits p.Width, else
// as several tables, each with the first column and the next columns
// that fit, one after the other.
func (p *Printer) fittedTable(headers []string, rows [][]string, width int) error {
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
		if err := (&Printer{W: &buf}).plainTable(hs, rs); err != nil {
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
			if w <= width || len(group) == 1 {
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
