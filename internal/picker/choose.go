package picker

import (
	"fmt"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"
)

// The choose screens: streams, then the stream's durable consumers, each
// a list with type-to-filter.

func (m *Model) loadStreams() tea.Cmd {
	m.loading, m.loadSince, m.listErr = true, m.now(), nil
	return tea.Batch(func() tea.Msg {
		rows, err := m.src.Streams(m.ctx)
		return streamsMsg{rows, err}
	}, m.spinCmd())
}

func (m *Model) loadConsumers() tea.Cmd {
	m.loading, m.loadSince, m.listErr, m.consumers = true, m.now(), nil, nil
	stream := m.stream
	return tea.Batch(func() tea.Msg {
		rows, err := m.src.Consumers(m.ctx, stream)
		return consumersMsg{stream, rows, err}
	}, m.spinCmd())
}

func (m *Model) onListKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	n := len(m.visible())
	switch k.String() {
	case "esc":
		if m.screen == screenConsumers && m.cfg.Stream == "" {
			m.screen, m.filter, m.sel = screenStreams, "", 0
			return m, m.loadStreams()
		}
		return m.quit(false)
	case "up":
		if m.sel > 0 {
			m.sel--
		}
	case "down":
		if m.sel < n-1 {
			m.sel++
		}
	case "backspace":
		if r := []rune(m.filter); len(r) > 0 {
			m.filter, m.sel = string(r[:len(r)-1]), 0
		}
	case "enter":
		names := m.visible()
		if m.sel >= len(names) {
			return m, nil
		}
		name := names[m.sel]
		m.filter, m.sel = "", 0
		if m.screen == screenStreams {
			m.stream, m.cons = name, nil
			if m.cfg.Kind == ForReset {
				m.screen = screenConsumers
				return m, m.loadConsumers()
			}
			return m, m.startPick()
		}
		m.consumer = name
		for i := range m.consumers {
			if m.consumers[i].Name == name {
				m.cons = &m.consumers[i]
			}
		}
		return m, m.startPick()
	default:
		if k.Text == "" {
			return m, nil
		}
		if m.filter == "" && k.Text == "q" {
			return m.quit(false)
		}
		m.filter, m.sel = m.filter+k.Text, 0
	}
	return m, nil
}

// bucketStream says whether a stream holds a KV bucket or an object
// store (listed only with Config.AllStreams, as nats stream ls does).
func bucketStream(name string) bool {
	return strings.HasPrefix(name, "KV_") || strings.HasPrefix(name, "OBJ_")
}

// visible lists the names the type-to-filter keeps (case-insensitive
// substring), without the buckets' streams unless asked for.
func (m *Model) visible() []string {
	var names []string
	if m.screen == screenStreams {
		for _, s := range m.streams {
			if m.cfg.AllStreams || !bucketStream(s.Name) {
				names = append(names, s.Name)
			}
		}
	} else {
		for _, c := range m.consumers {
			names = append(names, c.Name)
		}
	}
	f := strings.ToLower(m.filter)
	var out []string
	for _, n := range names {
		if strings.Contains(strings.ToLower(n), f) {
			out = append(out, n)
		}
	}
	return out
}

// hiddenStreams counts the buckets' streams left out of the list.
func (m *Model) hiddenStreams() int {
	n := 0
	for _, s := range m.streams {
		if !m.cfg.AllStreams && bucketStream(s.Name) {
			n++
		}
	}
	return n
}

// column is one column of a list: its header, its cells by name, whether
// it is a number (right-aligned) and whether it may be cut (names).
type column struct {
	header string
	cells  map[string]string
	number bool
	cut    bool
}

// table lays out rows of names over columns to fit width: every column's
// cells aligned, the names (and other cuttable columns) cut with an
// ellipsis when the line would be wider.
func table(cols []column, names []string, w int) (header string, rows map[string]string) {
	widths := make([]int, len(cols))
	for i, c := range cols {
		widths[i] = width(c.header)
		for _, n := range names {
			widths[i] = max(widths[i], width(c.cells[n]))
		}
	}
	total := 2 * (len(cols) - 1)
	for _, cw := range widths {
		total += cw
	}
	// Cut the cuttable columns, the widest first, down to 8 cells each.
	for total > w {
		best := -1
		for i, c := range cols {
			if c.cut && widths[i] > 8 && (best < 0 || widths[i] > widths[best]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		d := min(total-w, widths[best]-8)
		widths[best] -= d
		total -= d
	}
	cell := func(i int, s string) string {
		s = fit(s, widths[i])
		if cols[i].number {
			return padLeft(s, widths[i])
		}
		return padRight(s, widths[i])
	}
	var hs []string
	for i, c := range cols {
		hs = append(hs, cell(i, c.header))
	}
	header = strings.TrimRight(strings.Join(hs, "  "), " ")
	rows = map[string]string{}
	for _, n := range names {
		var cs []string
		for i, c := range cols {
			cs = append(cs, cell(i, c.cells[n]))
		}
		rows[n] = strings.TrimRight(strings.Join(cs, "  "), " ")
	}
	return header, rows
}

func (m *Model) listView() []string {
	w := m.width - 2 // the selection mark
	what := "Choose a stream"
	if m.screen == screenConsumers {
		what = "Choose a consumer of " + esc(m.stream)
	}
	lines := wrap(m.style("1;36", what)+m.spinText(m.loadSince), m.width, "  ")
	lines = append(lines, wrap("Type to filter: "+esc(m.filter)+"▏", m.width, "  ")...)
	lines = append(lines, "")
	names := m.visible()
	var cols []column
	if m.screen == screenStreams {
		name, msgs, first, last := map[string]string{}, map[string]string{}, map[string]string{}, map[string]string{}
		for _, s := range m.streams {
			name[s.Name], msgs[s.Name], first[s.Name], last[s.Name] = esc(s.Name), strconv.FormatUint(s.Messages, 10), "-", "-"
			if !s.First.IsZero() {
				first[s.Name], last[s.Name] = m.secondText(s.First), m.secondText(s.Last)
			}
		}
		cols = []column{{"STREAM", name, false, true}, {"MESSAGES", msgs, true, false}, {"FIRST", first, false, false}, {"LAST", last, false, false}}
	} else {
		name, del, floor, pend, paused, filt := map[string]string{}, map[string]string{}, map[string]string{}, map[string]string{}, map[string]string{}, map[string]string{}
		for _, c := range m.consumers {
			name[c.Name], del[c.Name], floor[c.Name], pend[c.Name] = esc(c.Name), strconv.FormatUint(c.Delivered, 10), strconv.FormatUint(c.AckFloor, 10), strconv.FormatUint(c.Pending, 10)
			paused[c.Name], filt[c.Name] = "no", filterText(c.Filters)
			if c.Paused {
				paused[c.Name] = "yes"
			}
		}
		cols = []column{{"CONSUMER", name, false, true}, {"DELIVERED", del, true, false}, {"ACK FLOOR", floor, true, false},
			{"PENDING", pend, true, false}, {"PAUSED", paused, false, false}, {"FILTER", filt, false, true}}
	}
	header, rows := table(cols, names, w)
	lines = append(lines, "  "+header)
	var foot []string
	switch {
	case m.listErr != nil:
		foot = append(foot, "")
		foot = append(foot, wrap("error: "+safe(m.listErr.Error()), m.width, "  ")...)
	case !m.loading && len(names) == 0:
		foot = append(foot, "", "(none)")
	}
	if n := m.hiddenStreams(); n > 0 && m.screen == screenStreams {
		foot = append(foot, wrap(fmt.Sprintf("%s of KV buckets and object stores hidden (--all lists them)", plural(n, "stream", "streams")), m.width, "  ")...)
	}
	foot = append(foot, "")
	foot = append(foot, flow([]string{"type to filter", "↑/↓ select", "Enter choose", "Esc back", "Ctrl-C quit"}, m.width)...)
	room := max(m.height-len(lines)-len(foot), 1)
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
	return append(lines, foot...)
}

// filterText names a set of filter subjects.
func filterText(filters []string) string {
	if len(filters) == 0 {
		return "all subjects"
	}
	out := make([]string, len(filters))
	for i, f := range filters {
		out[i] = esc(f)
	}
	return strings.Join(out, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
