package picker

import (
	"strings"

	tea "charm.land/bubbletea/v2"
)

// The choose screens: streams, then the stream's durable consumers, each
// a list with type-to-filter.

func (m *Model) loadStreams() tea.Cmd {
	m.loading = true
	return func() tea.Msg {
		rows, err := m.src.Streams(m.ctx)
		return streamsMsg{rows, err}
	}
}

func (m *Model) loadConsumers() tea.Cmd {
	m.loading, m.consumers = true, nil
	stream := m.stream
	return func() tea.Msg {
		rows, err := m.src.Consumers(m.ctx, stream)
		return consumersMsg{stream, rows, err}
	}
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
			m.stream = name
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

// visible lists the names the type-to-filter keeps (case-insensitive
// substring).
func (m *Model) visible() []string {
	var names []string
	if m.screen == screenStreams {
		for _, s := range m.streams {
			names = append(names, s.Name)
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
