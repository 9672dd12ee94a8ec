package commands

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jsctl/jsctl/jsutil/acks"
)

// The result protocol of a batch command (consume --batch, acks retry
// --batch), as the README's "Batches" section states it:
//
//   - The command's stdout is read line by line (a line ends at "\n"; a last
//     line without one counts too). A line whose first character other than
//     a space, tab, "\r", other Unicode space or byte-order mark (leadBlank)
//     is "{" is a result line; any other line is the
//     command's output and is copied to jsctl's standard error as it comes,
//     whatever its length.
//   - A result line is exactly one JSON object and nothing after it but
//     blanks: "seq" a positive integer in decimal digits (no sign, fraction,
//     exponent or quotes), "ok" true or false, "error" optional, any JSON
//     value (a string is kept as it is, any other value as its JSON text;
//     null is no error). ok:true with an error other than null or "" is
//     contradictory. Other members are allowed and ignored, but not one
//     named twice, nor "Seq", "OK" or another case variant of the three.
//   - A result line longer than maxResultLine bytes is not read as a result.
//   - A result line that is not well-formed is a protocol error: it is
//     reported on standard error with its first bytes, and the messages it
//     may concern fail: the message it names when its seq could be read and
//     is in the batch, else every message of the batch without a valid
//     result. A seq reported more than once fails, whatever the outcomes.
//     Only a message with exactly one ok:true and no protocol error is done.
//   - A well-formed line for a seq that is not in the batch is reported and
//     ignored. A command that exits 0 and prints no result line at all (well
//     formed or not) marks the whole batch done.
const (
	// maxResultLine bounds a result line, so that memory stays bounded
	// whatever the command prints.
	maxResultLine = 1 << 20
	// resultQuote is how much of a bad result line its protocol error
	// quotes.
	resultQuote = 200
	// maxResultError is how much of a reported error is kept (in the
	// failed record, the dead letter's header and the output).
	maxResultError = 4096
)

// resultLine is a well-formed result line.
type resultLine struct {
	Seq uint64
	OK  bool
	// Error is the reported error as text: a JSON string as it is, any
	// other value as its compact JSON text; "" when absent or null.
	Error string
}

// resultSyntaxError says why a result line is not well-formed. Seq is the
// seq the line names when it could be read, else 0.
type resultSyntaxError struct {
	Seq    uint64
	Reason string
}

func (e *resultSyntaxError) Error() string { return e.Reason }

// parseResultLine reads one result line (without its "\n").
func parseResultLine(b []byte) (resultLine, error) {
	var (
		r                    resultLine
		haveSeq, haveOK, bad bool
		haveErr              bool
		errRaw               json.RawMessage
	)
	fail := func(reason string) (resultLine, error) {
		seq := r.Seq
		if bad {
			seq = 0
		}
		return resultLine{}, &resultSyntaxError{Seq: seq, Reason: reason}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fail("not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fail("not valid JSON: " + jsonReason(err))
		}
		name, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fail("not valid JSON: " + jsonReason(err))
		}
		raw = bytes.TrimSpace(raw)
		switch name {
		case "seq":
			if haveSeq {
				bad = true
				return fail(`"seq" is given twice`)
			}
			haveSeq = true
			seq, ok := parseSeq(raw)
			if !ok {
				bad = true
				return fail(fmt.Sprintf(`"seq" must be a positive integer, got %s`, quoteRaw(raw)))
			}
			r.Seq = seq
		case "ok":
			if haveOK {
				return fail(`"ok" is given twice`)
			}
			haveOK = true
			switch string(raw) {
			case "true":
				r.OK = true
			case "false":
			default:
				return fail(fmt.Sprintf(`"ok" must be true or false, got %s`, quoteRaw(raw)))
			}
		case "error":
			if haveErr {
				return fail(`"error" is given twice`)
			}
			haveErr, errRaw = true, raw
		default:
			// "OK" or "Seq" next to "ok" or "seq" would be read as the
			// same member by some JSON readers (encoding/json): refused.
			for _, known := range []string{"seq", "ok", "error"} {
				if strings.EqualFold(name, known) {
					bad = bad || known == "seq"
					return fail(fmt.Sprintf("%q is not a member of a result line (did you mean %q?)", name, known))
				}
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return fail("not valid JSON: " + jsonReason(err))
	}
	if rest := bytes.Trim(b[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return fail("text after the JSON object")
	}
	switch {
	case !haveSeq:
		return fail(`no "seq"`)
	case !haveOK:
		return fail(`no "ok"`)
	}
	r.Error = resultErrorText(errRaw)
	if r.OK && r.Error != "" {
		return fail(`"ok" is true but "error" is set`)
	}
	return r, nil
}

// parseSeq reads a positive integer written with decimal digits only.
func parseSeq(raw []byte) (uint64, bool) {
	if len(raw) == 0 || raw[0] < '1' || raw[0] > '9' {
		return 0, false
	}
	for _, c := range raw {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(string(raw), 10, 64)
	return n, err == nil
}

// resultErrorText is a reported error as text (see resultLine.Error).
func resultErrorText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// cutText cuts s to at most n bytes (and a note), on a character
// boundary.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// quoteRaw shows a JSON value in a reason, cut.
func quoteRaw(raw []byte) string {
	return Preview(raw, 40)
}

// jsonReason is a decoding error's reason without Go's type names.
func jsonReason(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return se.Error()
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of the line"
	}
	return err.Error()
}

// resultProtocolError is a result line that is not well-formed, as the
// failure of the messages it concerns.
type resultProtocolError struct {
	Line   int    // its line number in the command's stdout, from 1
	Reason string // what is wrong with it
	Quote  string // its first bytes, escaped (see Preview)
}

func (e *resultProtocolError) Error() string {
	return fmt.Sprintf("result protocol error on line %d of the command's output: %s: %s", e.Line, e.Reason, e.Quote)
}

// batchResults collects the result lines of one run of a batch command
// and maps them to the messages' outcomes.
type batchResults struct {
	inBatch map[uint64]bool
	got     map[uint64]*seqResult
	lines   int // result lines read, well-formed or not
	// whole is the first protocol error that names no message of the
	// batch: it fails every message without a valid result.
	whole  *resultProtocolError
	report io.Writer // where protocol errors and ignored lines are reported
	// cut fails every message without a result line when the command's
	// output was cut off while still arriving (see runProcess).
	cut error
}

// seqResult is what the result lines said about one message.
type seqResult struct {
	line  int // the first line that reported it
	ok    bool
	err   string
	perr  *resultProtocolError // the first protocol error naming it
	count int
}

// cutOff records that the command's output was cut off: a message with no
// result line fails with err.
func (r *batchResults) cutOff(err error) { r.cut = err }

func newBatchResults(ds []acks.Delivery, report io.Writer) *batchResults {
	r := &batchResults{inBatch: make(map[uint64]bool, len(ds)), got: map[uint64]*seqResult{}, report: report}
	for _, d := range ds {
		r.inBatch[d.Seq] = true
	}
	return r
}

// add takes result line number line: its first bytes (all of it unless
// size > maxResultLine) and its size.
func (r *batchResults) add(line int, b []byte, size int64) {
	r.lines++
	if size > maxResultLine {
		r.protocolError(line, 0, fmt.Sprintf("a result line of %d bytes, over the limit of %d", size, maxResultLine), b)
		return
	}
	res, err := parseResultLine(bytes.TrimLeftFunc(b, leadBlank))
	if err != nil {
		var se *resultSyntaxError
		errors.As(err, &se)
		r.protocolError(line, se.Seq, "not a well-formed result line: "+se.Reason, b)
		return
	}
	if !r.inBatch[res.Seq] {
		fmt.Fprintf(r.report, "jsctl: warning: line %d of the batch command's output reports message %d, which is not in the batch: ignored\n", line, res.Seq)
		return
	}
	s := r.seq(res.Seq)
	s.count++
	if s.count > 1 {
		r.protocolError(line, res.Seq, fmt.Sprintf("message %d reported again (first on line %d)", res.Seq, s.line), b)
		return
	}
	s.line, s.ok, s.err = line, res.OK, res.Error
}

func (r *batchResults) seq(seq uint64) *seqResult {
	s := r.got[seq]
	if s == nil {
		s = &seqResult{}
		r.got[seq] = s
	}
	return s
}

// protocolError reports a bad result line and notes whom it fails: the
// message seq when it is in the batch, else the whole batch.
func (r *batchResults) protocolError(line int, seq uint64, reason string, b []byte) {
	e := &resultProtocolError{Line: line, Reason: reason, Quote: Preview(b, resultQuote)}
	if seq != 0 && r.inBatch[seq] {
		fmt.Fprintf(r.report, "jsctl: %v (message %d fails)\n", e, seq)
		if s := r.seq(seq); s.perr == nil {
			s.perr = e
		}
		return
	}
	fmt.Fprintf(r.report, "jsctl: %v (every message of the batch without a valid result fails)\n", e)
	if r.whole == nil {
		r.whole = e
	}
}

// errors is the outcome of each message of ds (nil: done), or nil when
// the command printed no result line at all (its exit status decides).
func (r *batchResults) errors(ds []acks.Delivery) []error {
	if r.lines == 0 && r.cut == nil {
		return nil
	}
	errs := make([]error, len(ds))
	for i, d := range ds {
		s := r.got[d.Seq]
		switch {
		case s != nil && s.perr != nil:
			errs[i] = s.perr
		case s != nil && s.count == 1 && s.ok:
		case s != nil && s.count == 1:
			msg := s.err
			if msg == "" {
				msg = "failed"
			}
			errs[i] = fmt.Errorf("command reported: %s", cutText(msg, maxResultError))
		case r.whole != nil:
			errs[i] = r.whole
		case r.cut != nil:
			errs[i] = r.cut
		default:
			errs[i] = fmt.Errorf("the command printed no result line for message %d", d.Seq)
		}
	}
	return errs
}

// readBatchOutput reads a batch command's stdout until EOF: result lines
// go to res, other lines to out as they come, whatever their length.
// Memory stays bounded: a result line is kept up to maxResultLine+1 bytes.
func readBatchOutput(r io.Reader, out io.Writer, res *batchResults) {
	br := bufio.NewReaderSize(r, 64*1024)
	for line := 1; ; line++ {
		if !readOutputLine(br, out, res, line) {
			return
		}
	}
}

// readOutputLine reads one line; it returns false at the end of the input.
func readOutputLine(br *bufio.Reader, out io.Writer, res *batchResults, line int) bool {
	const (
		undecided = iota // only blanks so far
		output
		result
	)
	mode := undecided
	var held []byte // leading blanks, then the result line
	var size int64  // the line's bytes, its "\n" included
	ended := false  // the line ends with "\n"
	for {
		chunk, err := br.ReadSlice('\n')
		size += int64(len(chunk))
		if mode == undecided {
			i := bytes.IndexFunc(chunk, func(c rune) bool { return !leadBlank(c) })
			switch {
			case i >= 0 && chunk[i] == '{':
				mode = result
			case i >= 0 || len(held)+len(chunk) > maxResultLine:
				mode = output
				_, _ = out.Write(held)
				held = nil
			}
		}
		if mode == output {
			_, _ = out.Write(chunk)
		} else if keep := maxResultLine + 1 - len(held); keep > 0 {
			held = append(held, chunk[:min(keep, len(chunk))]...)
		}
		if err == nil {
			ended = true
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) { // the end of the input
			break
		}
	}
	if size == 0 {
		return false
	}
	switch mode {
	case result:
		if ended {
			size--
			held = bytes.TrimSuffix(held, []byte("\n"))
		}
		res.add(line, held, size)
	case undecided:
		_, _ = out.Write(held) // a blank line
	}
	if !ended && mode != result {
		_, _ = out.Write([]byte("\n"))
	}
	return true
}

// leadBlank reports whether c may come before the "{" of a result line: a
// space, tab, "\r" or "\n", any other Unicode space (unicode.IsSpace: a
// no-break space, an ideographic space ...), a byte-order mark (U+FEFF,
// which Windows tools and PowerShell write before UTF-8 output) or another
// zero-width space (U+200B to U+200D, U+2060).
func leadBlank(c rune) bool {
	switch c {
	case '\uFEFF', '\u200B', '\u200C', '\u200D', '\u2060':
		return true
	}
	return unicode.IsSpace(c)
}
