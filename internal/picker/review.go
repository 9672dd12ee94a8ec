package picker

import (
	"fmt"
	"strings"
)

// The review: the plan of a reset to the first message the consumer
// receives from the cursor on, as consumer reset prints it (fitted to the
// width: no column dropped, long lines wrapped), scrolled when taller
// than the screen, and the question.

// reviewLayout is the review's fixed top and foot, its scrolled body and
// the rows the body has.
func (m *Model) reviewLayout() (top, body, foot []string, room int) {
	w := m.width
	top = m.header()
	title := fmt.Sprintf("Review: reset %s so that its first delivery is %s", esc(m.consumer), m.firstText(m.reviewRecv))
	top = append(top, wrap(title+m.spinText(m.reviewSince), w, "  ")...)
	if m.reviewShown != nil && m.reviewShown.Sequence != m.reviewRecv.seq {
		top = append(top, wrap(fmt.Sprintf("The message shown, %d (%s), is outside its filter %s: it does not receive it.",
			m.reviewShown.Sequence, esc(m.reviewShown.Subject), filterText(m.cons.Filters)), w, "  ")...)
	}
	top = append(top, "")
	switch {
	case m.reviewErr != nil:
		body = wrap("error: "+safe(m.reviewErr.Error()), w, "  ")
		foot = flow([]string{"n/Esc back", "q quit"}, w)
	case m.review == nil:
		body = []string{"planning…"}
		foot = flow([]string{"n/Esc back", "q quit"}, w)
	default:
		if m.cfg.RenderPlan != nil {
			for _, l := range strings.Split(strings.TrimRight(m.cfg.RenderPlan(m.review, w), "\n"), "\n") {
				body = append(body, wrap(l, w, leadingSpace(l)+"    ")...)
			}
		}
		if err := m.review.Err(); err != nil {
			foot = flow([]string{"Refused: this plan cannot be applied.", "n/Esc back", "q quit"}, w)
		} else {
			foot = flow([]string{"Apply this change?", "y apply", "n/Esc back", "q quit"}, w)
		}
	}
	room = max(m.height-len(top)-len(foot), 1)
	if len(body) > room {
		room = max(room-1, 1) // a line says where the view is
	}
	return top, body, foot, room
}

// leadingSpace is l's indentation.
func leadingSpace(l string) string { return l[:len(l)-len(strings.TrimLeft(l, " "))] }

func (m *Model) reviewView() []string {
	top, body, foot, room := m.reviewLayout()
	scroll := min(max(m.scroll, 0), max(len(body)-room, 0))
	lines := top
	end := min(scroll+room, len(body))
	lines = append(lines, body[scroll:end]...)
	if len(body) > room {
		for len(lines) < len(top)+room {
			lines = append(lines, "")
		}
		lines = append(lines, fmt.Sprintf("↑/↓ PgUp/PgDn scroll: lines %d–%d of %d", scroll+1, end, len(body)))
	}
	return append(lines, foot...)
}

// clampScroll keeps the review's scroll within its body.
func (m *Model) clampScroll() {
	_, body, _, room := m.reviewLayout()
	m.scroll = min(max(m.scroll, 0), max(len(body)-room, 0))
}
