package picker

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"
	"github.com/jsctl/jsctl/jsutil/seek"
)

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// indent is where the values of the preview's labelled lines start.
const indent = "          "

// style wraps s in an SGR sequence unless colours are off.
func (m *Model) style(code, s string) string {
	if !m.cfg.Color || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// timeText shows t to the nanosecond it holds (no trailing zeros).
func (m *Model) timeText(t time.Time) string {
	return t.In(m.cfg.Loc).Format("2006-01-02 15:04:05.999999999 MST")
}

// secondText shows t to the second (lists, ranges).
func (m *Model) secondText(t time.Time) string {
	return t.In(m.cfg.Loc).Format("2006-01-02 15:04:05 MST")
}

// View draws the screen on the alternate screen.
func (m *Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	return v
}

// Render draws the screen as text that fits the terminal.
func (m *Model) Render() string {
	var lines []string
	switch m.screen {
	case screenStreams, screenConsumers:
		lines = m.listView()
	case screenReview:
		lines = m.reviewView()
	default:
		lines = m.pickView()
	}
	h := max(m.height, 3)
	if len(lines) > h {
		lines = lines[:h]
	}
	w := max(m.width, 10)
	for i, l := range lines {
		if width(l) > w { // every line is made to fit; this only guards
			lines[i] = fit(l, w)
		}
	}
	return strings.Join(lines, "\n")
}

// spinText is the spinner while something is awaited, with how long the
// oldest request of since has waited once that is a second or more.
func (m *Model) spinText(since time.Time) string {
	if !m.busy() {
		return ""
	}
	s := " " + spinner[m.spin%len(spinner)] + " looking up"
	if !since.IsZero() {
		if d := m.now().Sub(since); d >= time.Second {
			s += fmt.Sprintf(", no answer for %s", d.Truncate(time.Second))
		}
	}
	return s
}

// keyPieces are the pick screen's keys.
func (m *Model) keyPieces() []string {
	enter := "Enter review"
	if m.cfg.Kind == ForSeek {
		enter = "Enter print"
	}
	return []string{"←/→ 1s", "[/] 1min", "PgUp/PgDn 1h", "↑/↓ message", "t time", "m mode", "f filter", enter, "q quit"}
}

func (m *Model) header() []string {
	pieces := []string{m.style("1;36", "Stream: "+esc(m.stream))}
	if m.cfg.Kind == ForReset && m.consumer != "" {
		pieces = append(pieces, "Consumer: "+esc(m.consumer))
		if c := m.cons; c != nil {
			label := "Consumer filter: "
			if len(c.Filters) > 1 {
				label = "Consumer filters: "
			}
			pieces = append(pieces, label+filterText(c.Filters))
		}
	}
	pv := "none"
	if m.preview != "" {
		pv = esc(m.preview)
	}
	if m.cfg.Kind == ForSeek {
		if m.preview == "" {
			pv = "all subjects"
		}
		pieces = append(pieces, "Subject filter: "+pv)
	} else {
		pieces = append(pieces, "Preview filter: "+pv)
	}
	lines := flow(pieces, m.width)
	if c := m.cons; c != nil {
		at := ""
		if c.AckFloorTime != nil {
			at = " (" + m.timeText(*c.AckFloorTime) + ")"
		}
		lines = append(lines, wrap(fmt.Sprintf("Position: delivered %d, ack floor %d%s", c.Delivered, c.AckFloor, at), m.width, "  ")...)
	}
	return lines
}

// strip draws the timeline of the filter in force: one column per
// bucket, scaled to the largest, a line with the cursor's bucket marked
// and the range; always three lines.
func (m *Model) strip() []string {
	out := func(lines ...string) []string {
		for len(lines) < 3 {
			lines = append(lines, "")
		}
		return lines[:3]
	}
	within := ""
	if subj := m.subjects(); len(subj) > 0 {
		within = " within " + filterText(subj)
	}
	tl := m.timeline
	if tl == nil || m.tlShown.filter != m.fkey() {
		if m.tlErr != nil {
			return out(wrap("timeline"+within+": "+safe(m.tlErr.Error()), m.width, "  ")...)
		}
		s := "timeline" + within + ":" + m.spinText(m.tlSince)
		if p := m.tlProgress; p.Total > 0 {
			s += fmt.Sprintf(" (%d of %d)", p.Done, p.Total)
		}
		return out(wrap(s, m.width, "  ")...)
	}
	if len(tl.Buckets) == 0 || tl.Total == 0 {
		return out(wrap("timeline: no messages"+within, m.width, "  ")...)
	}
	bars := []rune(" ▁▂▃▄▅▆▇█")
	var top uint64
	for _, b := range tl.Buckets {
		top = max(top, b.Count)
	}
	var s strings.Builder
	pos := -1
	t := m.curTime
	for i, b := range tl.Buckets {
		k := 0
		if b.Count > 0 && top > 0 {
			k = 1 + int(b.Count*uint64(len(bars)-2)/top)
		}
		s.WriteRune(bars[k])
		if !t.IsZero() && !t.Before(b.Start) && (t.Before(b.End) || i == len(tl.Buckets)-1 && !t.After(b.End)) {
			pos = i
		}
	}
	var mark string
	switch {
	case pos >= 0:
		mark = strings.Repeat(" ", pos) + m.style("1;33", "^")
	case t.IsZero():
	case t.Before(tl.Since):
		mark = m.style("1;33", "<") + " cursor before the range"
	default:
		mark = strings.Repeat(" ", max(len(tl.Buckets)-1-len(" cursor after the range"), 0)) + "cursor after the range " + m.style("1;33", ">")
	}
	count := "  " + plural(int(tl.Total), "message", "messages") + within
	first := s.String() + count
	if width(first) > m.width {
		first = s.String() + "  " + plural(int(tl.Total), "msg", "msgs")
	}
	lines := []string{first, mark}
	rng := fmt.Sprintf("%s … %s", m.secondText(tl.Since), m.secondText(tl.Until))
	if w := wrap(rng, m.width, "  "); len(w) == 1 {
		lines = append(lines, w[0])
	}
	return out(lines...)
}

func (m *Model) timeLine() []string {
	t := "–"
	if !m.curTime.IsZero() {
		t = m.timeText(m.curTime)
	}
	return wrap(fmt.Sprintf("Time: %s  (%s)", t, m.mode)+m.spinText(m.asked[m.cur]), m.width, "  ")
}

func (m *Model) inputLines() []string {
	var lines []string
	switch m.input {
	case inputTime:
		lines = wrap("Go to time: "+esc(m.text)+"▏  (Enter go, Esc cancel)", m.width, "  ")
	case inputFilter:
		what := "the consumer's own filters"
		if m.cfg.Kind == ForSeek || m.cons == nil {
			what = "all subjects"
		}
		lines = wrap("Preview filter: "+esc(m.text)+"▏  (empty: "+what+"; Enter set, Esc cancel)", m.width, "  ")
	}
	if m.input != inputNone && m.inputErr != "" {
		lines = append(lines, wrap("error: "+m.inputErr, m.width, "  ")...)
	}
	return lines
}

func (m *Model) pickView() []string {
	top := m.header()
	top = append(top, m.strip()...)
	top = append(top, "")
	top = append(top, m.timeLine()...)
	top = append(top, m.inputLines()...)
	foot := m.footLines()
	room := max(m.height-len(top)-len(foot), 0)
	body := m.previewLines(room)
	for len(body) < room {
		body = append(body, "")
	}
	return append(append(top, body...), foot...)
}

// footLines: what the consumer receives and the plan (ForReset), the
// status line and the keys.
func (m *Model) footLines() []string {
	w := m.width
	var foot []string
	if m.cfg.Kind == ForReset && m.cons != nil {
		foot = append(foot, m.recvLines()...)
		foot = append(foot, wrap(m.planLine(), w, "      ")...)
	}
	switch {
	case m.listErr != nil:
		foot = append(foot, wrap("error: "+safe(m.listErr.Error()), w, "  ")...)
	case m.lookErr != nil:
		foot = append(foot, wrap("error: "+safe(m.lookErr.Error()), w, "  ")...)
	case m.recvErr != nil && m.settled():
		foot = append(foot, wrap("error: "+safe(m.recvErr.Error()), w, "  ")...)
	}
	if m.notice != "" {
		foot = append(foot, wrap(m.style("1;33", safe(m.notice)), w, "  ")...)
	}
	if m.flash != "" {
		foot = append(foot, wrap(m.flash, w, "  ")...)
	}
	return append(foot, flow(m.keyPieces(), w)...)
}

// firstText names the first message a consumer receives.
func (m *Model) firstText(rc *recvAt) string {
	if rc.msg == nil {
		return fmt.Sprintf("the next message stored (sequence %d)", rc.seq)
	}
	return fmt.Sprintf("message %d (%s, %s)", rc.seq, esc(rc.msg.Subject), m.timeText(rc.msg.Time))
}

// recvLines say, when the message shown is not the one the consumer
// would receive first from there, which one it is.
func (m *Model) recvLines() []string {
	rc, ok := m.receivable()
	if !ok || !m.settled() {
		return nil
	}
	who := esc(m.consumer)
	switch {
	case m.curMsg != nil && rc.seq == m.curMsg.Sequence:
		return nil
	case m.curMsg != nil:
		return wrap(m.style("1;33", fmt.Sprintf("%s does not receive message %d: %s is outside its filter %s. From here its first delivery is %s.",
			who, m.curMsg.Sequence, esc(m.curMsg.Subject), filterText(m.cons.Filters), m.firstText(rc))), m.width, "  ")
	}
	return wrap(fmt.Sprintf("From here %s's first delivery is %s.", who, m.firstText(rc)), m.width, "  ")
}

func (m *Model) planLine() string {
	rc, ok := m.receivable()
	if !ok || !m.settled() {
		return "Plan: …"
	}
	pl, ok := m.plans[rc.seq]
	switch {
	case !ok && m.planErr != nil:
		return "Plan: " + safe(m.planErr.Error())
	case !ok:
		if since, asked := m.planAsked[rc.seq]; asked {
			return "Plan: …" + m.spinText(since)
		}
		return "Plan: …"
	case len(pl.Changes) == 0:
		return "Plan: none"
	}
	c := pl.Changes[0]
	s := fmt.Sprintf("Plan: first delivery %d, redeliver %s, skip %s, ack records in range %d (%s)", c.To.Sequence, countText(c.Redeliver), countText(c.Skip), c.AckRecordsInRange, c.Method)
	if c.Refused != "" {
		s += "; refused: " + c.Refused
	}
	return s
}

// previewLines show the cursor's message as seek does (its sequence,
// time, subject, headers and payload) and its neighbours, in room lines:
// the payload is shortened first, then the neighbours.
func (m *Model) previewLines(room int) []string {
	if !m.known && m.shown == nil {
		return nil
	}
	w := m.width
	ess := []string{fmt.Sprintf("Sequence: %d", m.curPos)}
	var headers, body []string
	if msg := m.curMsg; msg == nil {
		ess = append(ess, wrap("Message:  "+m.noMessageText(), w, indent)...)
	} else {
		line := "Message:  " + m.timeText(msg.Time)
		if m.cur.seq == 0 && !m.curTime.IsZero() {
			switch d := msg.Time.Sub(m.curTime); {
			case d == 0:
				line += ", exactly at the time"
			case d > 0:
				line += ", " + d.String() + " after the time"
			default:
				line += ", " + (-d).String() + " before the time"
			}
		}
		ess = append(ess, wrap(line, w, indent)...)
		ess = append(ess, wrap(fmt.Sprintf("Subject:  %s   Size: %d bytes", esc(msg.Subject), msg.Size), w, indent)...)
		if len(msg.Header) > 0 {
			keys := make([]string, 0, len(msg.Header))
			for k := range msg.Header {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var hs []string
			for _, k := range keys {
				hs = append(hs, esc(k)+"="+esc(strings.Join(msg.Header[k], ",")))
			}
			headers = wrap("Headers:  "+strings.Join(hs, "  "), w, indent)
		}
		for i, l := range payload(msg.Data) {
			label := indent
			if i == 0 {
				label = "Payload:  "
			}
			body = append(body, wrap(label+l, w, indent)...)
		}
	}
	rows, at := m.aroundRows()
	avail := room - len(ess)
	// The neighbours keep at least five rows (and their label) before
	// the payload and headers shorten.
	keepRows := min(len(rows), 5)
	if keepRows > 0 {
		avail -= keepRows + 1
	}
	if len(headers) > max(avail, 0) {
		headers = headers[:max(avail, 0)]
	}
	avail -= len(headers)
	if len(body) > max(avail, 0) {
		body = body[:max(avail, 0)]
		if len(body) > 0 {
			body[len(body)-1] = indent + "…"
		}
	}
	avail -= len(body)
	lines := append(append(ess, headers...), body...)
	if n := min(len(rows), keepRows+max(avail, 0)); n > 0 && room-len(lines) > 1 {
		n = min(n, room-len(lines)-1)
		start := min(max(at-n/2, 0), len(rows)-n)
		lines = append(lines, "Around:")
		lines = append(lines, rows[start:start+n]...)
	}
	if len(lines) > room {
		lines = lines[:room]
	}
	return lines
}

func (m *Model) noMessageText() string {
	switch {
	case m.cur.seq > 0:
		return "none from here on within the filter; a reset here starts with the next message stored"
	case m.mode == seek.Before:
		return "none at or before this time within the filter; a reset here starts at the stream's first sequence"
	}
	return "none at or after this time within the filter; a reset here starts with the next message stored"
}

// aroundRows are the neighbours on screen, one row each, the cursor's
// marked (a row of its own when it is no message), and the index of the
// cursor's row.
func (m *Model) aroundRows() ([]string, int) {
	a := m.shown
	if a == nil || len(a.res.Neighbours) == 0 || len(a.res.Neighbours) == 1 && m.curMsg != nil {
		return nil, 0
	}
	l := a.res.Neighbours
	seqW, sizeW := len(strconv.FormatUint(m.curPos, 10)), 1
	for _, n := range l {
		seqW = max(seqW, len(strconv.FormatUint(n.Sequence, 10)))
		sizeW = max(sizeW, len(strconv.Itoa(n.Size)))
	}
	const timeLayout = "15:04:05.000000"
	const noMsg = "(no message: the position shown)"
	subjW := 0
	for _, n := range l {
		subjW = max(subjW, width(esc(n.Subject)))
	}
	if m.curMsg == nil {
		subjW = max(subjW, width(noMsg))
	}
	subjW = max(min(subjW, m.width-(2+2+seqW+2+len(timeLayout)+2+2+sizeW+2)), 8)
	row := func(mark, seq, t, subj, size string) string {
		return strings.TrimRight(fmt.Sprintf("  %s%s  %s  %s  %s", mark, padLeft(seq, seqW), padRight(t, len(timeLayout)), padRight(fit(subj, subjW), subjW), padLeft(size, sizeW+2)), " ")
	}
	var rows []string
	at := 0
	placed := m.curMsg != nil
	for _, n := range l {
		if !placed && n.Sequence >= m.curPos {
			at, placed = len(rows), true
			rows = append(rows, row(m.style("1;33", "> "), strconv.FormatUint(m.curPos, 10), "–", noMsg, ""))
		}
		mark := "  "
		if m.curMsg != nil && n.Sequence == m.curPos {
			mark, at = m.style("1;33", "> "), len(rows)
		}
		rows = append(rows, row(mark, strconv.FormatUint(n.Sequence, 10), n.Time.In(m.cfg.Loc).Format(timeLayout), esc(n.Subject), strconv.Itoa(n.Size)+" B"))
	}
	if !placed {
		at = len(rows)
		rows = append(rows, row(m.style("1;33", "> "), strconv.FormatUint(m.curPos, 10), "–", noMsg, ""))
	}
	return rows, at
}

// payload shows data: JSON pretty-printed, text as is, binary as hex, at
// most 6 lines of 100 characters, escaped.
func payload(data []byte) []string {
	if len(data) == 0 {
		return nil
	}
	var text string
	var v any
	switch {
	case json.Unmarshal(data, &v) == nil && (data[0] == '{' || data[0] == '['):
		b, _ := json.MarshalIndent(v, "", "  ")
		text = string(b)
	case utf8.Valid(data) && printable(string(data)):
		text = string(data)
	default:
		n := min(len(data), 48)
		text = hex.EncodeToString(data[:n])
		if n < len(data) {
			text += "…"
		}
	}
	lines := strings.Split(text, "\n")
	if len(lines) > 6 {
		lines = append(lines[:5], "…")
	}
	for i, l := range lines {
		l = esc(l)
		if utf8.RuneCountInString(l) > 100 {
			l = string([]rune(l)[:99]) + "…"
		}
		lines[i] = l
	}
	return lines
}

func printable(s string) bool {
	for _, r := range s {
		if !unicode.IsPrint(r) && r != '\n' && r != '\t' {
			return false
		}
	}
	return true
}

// countText is a plan count, "unknown" when a read it needs was refused
// or unanswered (nil).
func countText(n *uint64) string {
	if n == nil {
		return "unknown"
	}
	return fmt.Sprint(*n)
}
