package picker

import (
	tea "charm.land/bubbletea/v2"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// HelpPick is the pick screen's key line.
const HelpPick = "←/→ 1s [/] 1min PgUp/PgDn 1h ↑/↓ msg t time m mode f filter Enter %s q quit"

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// style wraps s in an SGR sequence unless colours are off.
func (m *Model) style(code, s string) string {
	if !m.cfg.Color || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (m *Model) timeText(t time.Time) string {
	return t.In(m.cfg.Loc).Format("2006-01-02 15:04:05 MST")
}

// View draws the screen on the alternate screen.
func (m *Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	return v
}

// Render draws the screen as text, cut to the terminal's size.
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
	for i, l := range lines {
		lines[i] = cut(l, max(m.width, 10))
	}
	return strings.Join(lines, "\n")
}

// cut shortens a line to w columns, skipping over SGR sequences.
func cut(s string, w int) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(s); {
		if s[i] == 0x1b {
			j := strings.IndexByte(s[i:], 'm')
			if j < 0 {
				break
			}
			b.WriteString(s[i : i+j+1])
			i += j + 1
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if n >= w {
			i += size
			continue
		}
		b.WriteRune(r)
		n++
		i += size
	}
	return b.String()
}

func (m *Model) spinText() string {
	if !m.busy() {
		return ""
	}
	return " " + spinner[m.spin%len(spinner)] + " looking up"
}

func (m *Model) listView() []string {
	var lines []string
	what := "stream"
	if m.screen == screenConsumers {
		what = "consumer of " + m.stream
	}
	lines = append(lines, m.style("1;36", "Choose a "+what)+m.spinText())
	lines = append(lines, "Type to filter: "+m.filter+"▏")
	lines = append(lines, "")
	names := m.visible()
	var header string
	rows := map[string]string{}
	if m.screen == screenStreams {
		header = fmt.Sprintf("  %-20s %10s  %-23s  %-23s", "STREAM", "MESSAGES", "FIRST", "LAST")
		for _, s := range m.streams {
			first, last := "-", "-"
			if !s.First.IsZero() {
				first, last = m.timeText(s.First), m.timeText(s.Last)
			}
			rows[s.Name] = fmt.Sprintf("%-20s %10d  %-23s  %-23s", clean(s.Name), s.Messages, first, last)
		}
	} else {
		header = fmt.Sprintf("  %-20s %10s %10s %10s %-6s", "CONSUMER", "DELIVERED", "ACK FLOOR", "PENDING", "PAUSED")
		for _, c := range m.consumers {
			paused := "no"
			if c.Paused {
				paused = "yes"
			}
			rows[c.Name] = fmt.Sprintf("%-20s %10d %10d %10d %-6s", clean(c.Name), c.Delivered, c.AckFloor, c.Pending, paused)
		}
	}
	lines = append(lines, header)
	room := max(m.height-7, 1)
	start := 0
	if m.sel >= room {
		start = m.sel - room + 1
	}
	for i := start; i < len(names) && i < start+room; i++ {
		row := rows[names[i]]
		if i == m.sel {
			lines = append(lines, "> "+m.style("7", row))
		} else {
			lines = append(lines, "  "+row)
		}
	}
	switch {
	case m.statusErr != nil:
		lines = append(lines, "", "error: "+m.statusErr.Error())
	case !m.loading && len(names) == 0:
		lines = append(lines, "", "(none)")
	}
	lines = append(lines, "", "type to filter  ↑/↓ select  Enter choose  Esc back  Ctrl-C quit")
	return lines
}

func (m *Model) header() []string {
	h := m.style("1;36", "Stream: "+clean(m.stream))
	if m.consumer != "" {
		h += "  Consumer: " + clean(m.consumer)
	}
	f := m.subject
	if f == "" {
		f = "all subjects"
	}
	h += "  Filter: " + clean(f)
	lines := []string{h}
	if c := m.cons; c != nil {
		at := ""
		if c.AckFloorTime != nil {
			at = " (" + m.timeText(*c.AckFloorTime) + ")"
		}
		lines = append(lines, fmt.Sprintf("Position: delivered %d, ack floor %d%s", c.Delivered, c.AckFloor, at))
	}
	return lines
}

// strip draws the timeline: one column per bucket, scaled to the largest,
// and a line with the cursor's bucket marked.
func (m *Model) strip() []string {
	tl := m.timeline
	if tl == nil {
		if m.timelineErr != nil {
			return []string{"timeline: " + m.timelineErr.Error()}
		}
		return []string{"timeline: loading…", ""}
	}
	if len(tl.Buckets) == 0 {
		return []string{"timeline: no messages", ""}
	}
	bars := []rune(" ▁▂▃▄▅▆▇█")
	var top uint64
	for _, b := range tl.Buckets {
		top = max(top, b.Count)
	}
	var s strings.Builder
	pos := -1
	for i, b := range tl.Buckets {
		k := 0
		if b.Count > 0 && top > 0 {
			k = 1 + int(b.Count*uint64(len(bars)-2)/top)
		}
		s.WriteRune(bars[k])
		if !m.cursor.Before(b.Start) && (m.cursor.Before(b.End) || i == len(tl.Buckets)-1 && !m.cursor.After(b.End)) {
			pos = i
		}
	}
	var mark string
	switch {
	case pos >= 0:
		mark = strings.Repeat(" ", pos) + m.style("1;33", "^")
	case m.cursor.Before(tl.Since):
		mark = m.style("1;33", "<") + " cursor before the range"
	default:
		mark = strings.Repeat(" ", len(tl.Buckets)-1) + m.style("1;33", ">") + " cursor after the range"
	}
	return []string{
		fmt.Sprintf("%s  %d msgs", s.String(), tl.Total),
		mark,
		fmt.Sprintf("%s … %s", m.timeText(tl.Since), m.timeText(tl.Until)),
	}
}

func (m *Model) pickView() []string {
	lines := m.header()
	lines = append(lines, m.strip()...)
	lines = append(lines, "")
	switch {
	case m.cursor.IsZero():
		lines = append(lines, "Time: –"+m.spinText())
	default:
		lines = append(lines, fmt.Sprintf("Time: %s  (%s)%s", m.timeText(m.cursor), m.mode, m.spinText()))
	}
	switch m.input {
	case inputTime:
		lines = append(lines, "Go to time: "+m.text+"▏  (Enter go, Esc cancel)")
		if m.inputErr != "" {
			lines = append(lines, "error: "+m.inputErr)
		}
	case inputFilter:
		lines = append(lines, "Subject filter: "+m.text+"▏  (empty: all; Enter set, Esc cancel)")
	}
	if m.statusErr != nil {
		lines = append(lines, "error: "+m.statusErr.Error())
	}
	foot := []string{}
	if m.cfg.Kind == ForReset {
		foot = append(foot, m.planLine())
	}
	verb := "review"
	if m.cfg.Kind == ForSeek {
		verb = "finish"
	}
	foot = append(foot, fmt.Sprintf(HelpPick, verb))
	body := m.preview()
	room := max(m.height, 10) - len(lines) - len(foot)
	if len(body) > room {
		body = body[:max(room, 0)]
	}
	for len(body) < room {
		body = append(body, "")
	}
	lines = append(lines, body...)
	return append(lines, foot...)
}

// preview shows the answer for the cursor as seek does: the sequence, the
// message, its headers and payload, and its neighbours.
func (m *Model) preview() []string {
	r := m.shown
	if r == nil {
		return nil
	}
	lines := []string{fmt.Sprintf("Sequence: %d", r.Sequence)}
	msg := r.Message
	if msg == nil {
		lines = append(lines, "Message:  none selected by this time; a consumer reset here starts at the sequence above")
	} else {
		d := msg.Time.Sub(r.Target)
		off := "exactly at the time"
		switch {
		case d > 0:
			off = d.String() + " after"
		case d < 0:
			off = (-d).String() + " before"
		}
		lines = append(lines,
			fmt.Sprintf("Message:  %s, %s", msg.Time.In(m.cfg.Loc).Format("2006-01-02 15:04:05.000000000 MST"), off),
			fmt.Sprintf("Subject:  %s   Size: %d bytes", clean(msg.Subject), msg.Size))
		if len(msg.Header) > 0 {
			keys := make([]string, 0, len(msg.Header))
			for k := range msg.Header {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var hs []string
			for _, k := range keys {
				hs = append(hs, clean(k)+"="+clean(strings.Join(msg.Header[k], ",")))
			}
			lines = append(lines, "Headers:  "+strings.Join(hs, "  "))
		}
		pl := payload(msg.Data)
		if len(pl) > 0 {
			lines = append(lines, "Payload:  "+pl[0])
			for _, l := range pl[1:] {
				lines = append(lines, "          "+l)
			}
		}
	}
	if len(r.Neighbours) > 1 || (msg == nil && len(r.Neighbours) > 0) {
		lines = append(lines, "Around:")
		for _, n := range r.Neighbours {
			mark := "  "
			if msg != nil && n.Sequence == msg.Sequence {
				mark = m.style("1;33", "> ")
			}
			lines = append(lines, fmt.Sprintf("  %s%-8d %s  %-24s %6d B", mark, n.Sequence, n.Time.In(m.cfg.Loc).Format("15:04:05.000"), clean(n.Subject), n.Size))
		}
	}
	return lines
}

// payload shows data: JSON pretty-printed, text as is, binary as hex, at
// most 6 lines of 100 characters.
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
		l = clean(l)
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

// clean makes a server-supplied string safe to draw: control characters
// (an ESC sequence, a newline) are shown escaped.
func clean(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) }) {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

func (m *Model) planLine() string {
	k := seekKey{m.cursor.Unix(), m.mode, ""}
	pl, ok := m.plans[k]
	switch {
	case m.planErr != nil && !ok:
		return "Plan: " + m.planErr.Error()
	case !ok || len(pl.Changes) == 0:
		return "Plan: …"
	}
	c := pl.Changes[0]
	s := fmt.Sprintf("Plan: redeliver %d, skip %d, ack records in range %d (%s to %d)", c.Redeliver, c.Skip, c.AckRecordsInRange, c.Method, c.To.Sequence)
	if c.Refused != "" {
		s += " · refused: " + c.Refused
	}
	return s
}

func (m *Model) reviewView() []string {
	lines := m.header()
	lines = append(lines, fmt.Sprintf("Review: reset to %s (%s)%s", m.timeText(m.cursor), m.mode, m.spinText()), "")
	switch {
	case m.reviewErr != nil:
		lines = append(lines, "error: "+m.reviewErr.Error(), "", "n/Esc back  q quit")
		return lines
	case m.review == nil:
		return append(lines, "planning…")
	}
	for _, c := range m.review.Changes {
		lines = append(lines, fmt.Sprintf("%s: %s to %d: redeliver %d, skip %d, ack records in range %d", clean(c.Consumer), c.Method, c.To.Sequence, c.Redeliver, c.Skip, c.AckRecordsInRange))
	}
	if m.cfg.RenderPlan != nil {
		lines = append(lines, strings.Split(strings.TrimRight(m.cfg.RenderPlan(m.review), "\n"), "\n")...)
	}
	lines = append(lines, "")
	if err := m.review.Err(); err != nil {
		return append(lines, "Refused: this plan cannot be applied.  n/Esc back  q quit")
	}
	return append(lines, "Apply this change? y apply  n/Esc back  q quit")
}
