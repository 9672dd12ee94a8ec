package picker

import (
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/jsctl/jsctl/jsutil/seek"
)

// lastTime is a time after every message: Before there selects the last.
var lastTime = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)

func (m *Model) fkey() string { return filterKey(m.subjects()) }

// startPick enters the pick screen: it reads the consumer (ForReset),
// then places the cursor and loads the timeline.
func (m *Model) startPick() tea.Cmd {
	m.screen = screenPick
	m.clearPick()
	if m.cfg.Kind == ForReset && m.cons == nil {
		m.loading, m.loadSince = true, m.now()
		stream := m.stream
		return tea.Batch(func() tea.Msg {
			rows, err := m.src.Consumers(m.ctx, stream)
			return consumersMsg{stream, rows, err}
		}, m.spinCmd())
	}
	return m.openCursor()
}

// openCursor places the first cursor: at Config.Start; else on the
// consumer's next message (the first at or after its ack floor + 1
// within the filter); else (seek -i) on the last message.
func (m *Model) openCursor() tea.Cmd {
	m.loading = false
	cmds := []tea.Cmd{m.loadTimeline(), m.spinCmd()}
	switch {
	case !m.cfg.Start.IsZero():
		cmds = append(cmds, m.setTime(m.cfg.Start))
	case m.cons != nil:
		cmds = append(cmds, m.setCursor(lookKey{seq: m.cons.AckFloor + 1, filter: m.fkey()}))
	default:
		m.loading, m.loadSince = true, m.now()
		cmds = append(cmds, m.loadLast())
	}
	return tea.Batch(cmds...)
}

func (m *Model) loadLast() tea.Cmd {
	stream, subjects, f := m.stream, m.subjects(), m.fkey()
	return func() tea.Msg {
		r, err := m.src.Seek(m.ctx, stream, lastTime, seek.Before, subjects, 0)
		if err != nil {
			return lastMsg{filter: f, err: err}
		}
		return lastMsg{filter: f, msg: r.Message}
	}
}

func (m *Model) onLast(msg lastMsg) tea.Cmd {
	if msg.filter != m.fkey() || m.screen != screenPick || !m.loading {
		return nil
	}
	m.loading = false
	switch {
	case msg.err != nil:
		m.lookErr = msg.err
		return nil
	case msg.msg == nil: // nothing within the filter
		return m.setTime(m.now())
	}
	return m.stepTo(*msg.msg)
}

// setTime puts the cursor at t (exactly: a typed fraction is kept) and
// selects the message there by the mode.
func (m *Model) setTime(t time.Time) tea.Cmd {
	m.curTime = t
	return m.setCursor(lookKey{at: t.UnixNano(), mode: m.mode, filter: m.fkey()})
}

// setCursor moves the cursor to k and shows its answer at once when
// cached, else after the debounce.
func (m *Model) setCursor(k lookKey) tea.Cmd {
	m.cur, m.known, m.lookErr = k, false, nil
	m.gen++
	if a, ok := m.cache[k]; ok {
		m.showAnswer(a)
		return m.afterKnown()
	}
	gen := m.gen
	return tea.Batch(tea.Tick(m.cfg.Debounce, func(time.Time) tea.Msg { return debounceMsg{gen} }), m.spinCmd())
}

// showAnswer shows a, the cursor's own answer.
func (m *Model) showAnswer(a *answer) {
	m.shown, m.lookErr = a, nil
	m.curPos, m.curMsg, m.known = a.res.Sequence, a.res.Message, true
	if a.key.seq > 0 && a.res.Message != nil {
		m.curTime = a.res.Message.Time // a message cursor shows its message's time
	}
}

// settled says whether the screen shows the cursor's own answer.
func (m *Model) settled() bool {
	_, ok := m.cache[m.cur]
	return ok && m.known && m.cur != (lookKey{})
}

func (m *Model) lookup(k lookKey) tea.Cmd {
	m.asked[k] = m.now()
	around, stream, subjects := m.around(), m.stream, splitFilter(k.filter)
	return func() tea.Msg {
		var r *seek.Result
		var err error
		if k.seq > 0 {
			r, err = m.src.At(m.ctx, stream, k.seq, subjects, around)
		} else {
			r, err = m.src.Seek(m.ctx, stream, time.Unix(0, k.at), k.mode, subjects, around)
		}
		return lookMsg{ans: &answer{key: k, res: r, around: around}, err: err}
	}
}

func (m *Model) onLook(msg lookMsg) tea.Cmd {
	k := msg.ans.key
	delete(m.asked, k)
	if msg.err != nil {
		if k == m.cur {
			m.lookErr, m.pending = msg.err, 0
		}
		return nil
	}
	m.answered(nil)
	m.cache[k] = msg.ans
	var cmds []tea.Cmd
	if m.tlErr != nil && m.screen == screenPick {
		cmds = append(cmds, m.loadTimeline()) // the server answers again
	}
	if k != m.cur {
		return tea.Batch(cmds...)
	}
	m.showAnswer(msg.ans)
	return tea.Batch(append(cmds, m.resolvePending(), m.afterKnown())...)
}

// move moves the time by d, to a whole second, and selects the message
// there by the mode.
func (m *Model) move(d time.Duration) tea.Cmd {
	base := m.curTime
	if base.IsZero() {
		base = m.refTime()
	}
	return m.setTime(base.Add(d).Truncate(time.Second))
}

// refTime is the time to move from when the cursor has none (it is past
// the last message): the message before it, else now.
func (m *Model) refTime() time.Time {
	if m.shown != nil {
		l := m.shown.res.Neighbours
		for i := len(l) - 1; i >= 0; i-- {
			if l[i].Sequence < m.curPos {
				return l[i].Time
			}
		}
	}
	return m.now()
}

// step moves the cursor to the previous (dir -1) or next message within
// the filter: exactly one message, found in the neighbours on screen, or
// once the cursor's own answer is in.
func (m *Model) step(dir int) tea.Cmd {
	if m.lookErr != nil {
		return nil
	}
	if m.known && m.shown != nil && m.shown.key.filter == m.cur.filter {
		if n, ok := stepIn(m.shown, m.curPos, m.curMsg != nil, dir); ok {
			if n == nil {
				m.flash = noMore(dir)
				return nil
			}
			return m.stepTo(*n)
		}
	}
	m.pending += dir
	return m.spinCmd()
}

func noMore(dir int) string {
	if dir > 0 {
		return "no later message within the filter"
	}
	return "no earlier message within the filter"
}

// resolvePending takes the steps that waited for the cursor's answer.
func (m *Model) resolvePending() tea.Cmd {
	var cmds []tea.Cmd
	for m.pending != 0 && m.shown != nil {
		dir := 1
		if m.pending < 0 {
			dir = -1
		}
		n, ok := stepIn(m.shown, m.curPos, m.curMsg != nil, dir)
		if !ok {
			break
		}
		m.pending -= dir
		if n == nil {
			m.pending, m.flash = 0, noMore(dir)
			break
		}
		cmds = append(cmds, m.stepTo(*n))
	}
	return tea.Batch(cmds...)
}

// stepTo puts the cursor on message n: it is known at once; its own
// neighbours follow with its answer.
func (m *Model) stepTo(n seek.Message) tea.Cmd {
	cmd := m.setCursor(lookKey{seq: n.Sequence, filter: m.fkey()})
	if !m.known {
		m.curPos, m.curMsg, m.known = n.Sequence, &n, true
	}
	m.curTime = n.Time
	return cmd
}

// stepIn finds in a's neighbours the message one step from position pos
// (a message when onMsg) in direction dir. ok is false when a cannot tell
// (the step leaves the run of messages a holds); a nil message with ok
// says there is none.
//
// a's neighbours are a contiguous run of the messages within its filter:
// up to a.around before its Sequence and after it. Fewer than a.around on
// a side say that no message lies beyond them on that side.
func stepIn(a *answer, pos uint64, onMsg bool, dir int) (*seek.Message, bool) {
	r := a.res
	l := r.Neighbours
	var nBefore, nAfter int
	for _, n := range l {
		switch {
		case n.Sequence < r.Sequence:
			nBefore++
		case n.Sequence > r.Sequence || r.Message == nil:
			nAfter++
		}
	}
	firstKnown, lastKnown := nBefore < a.around, nAfter < a.around
	if len(l) == 0 {
		return nil, firstKnown && lastKnown
	}
	lo, hi := l[0].Sequence, l[len(l)-1].Sequence
	if dir > 0 {
		if pos < lo && !firstKnown {
			return nil, false
		}
		for i := range l {
			if l[i].Sequence > pos || !onMsg && l[i].Sequence == pos {
				return &l[i], true
			}
		}
		return nil, lastKnown
	}
	if pos > hi+1 && !lastKnown {
		return nil, false
	}
	for i := len(l) - 1; i >= 0; i-- {
		if l[i].Sequence < pos {
			return &l[i], true
		}
	}
	return nil, firstKnown
}

// filterChanged selects again within the new filter: by the time shown
// (with the mode), else from the position.
func (m *Model) filterChanged() tea.Cmd {
	m.pending = 0
	cmds := []tea.Cmd{m.loadTimeline()}
	switch {
	case m.loading && m.cur == (lookKey{}):
		cmds = append(cmds, m.loadLast())
	case !m.curTime.IsZero():
		cmds = append(cmds, m.setTime(m.curTime))
	case m.curPos > 0:
		cmds = append(cmds, m.setCursor(lookKey{seq: m.curPos, filter: m.fkey()}))
	}
	return tea.Batch(cmds...)
}

// receivable is the first message the consumer receives from the
// cursor's position on: the message shown when it is within the
// consumer's filters.
func (m *Model) receivable() (*recvAt, bool) {
	if m.cfg.Kind != ForReset || m.cons == nil || !m.known {
		return nil, false
	}
	if m.ownFilter() {
		if m.curMsg != nil {
			return &recvAt{seq: m.curMsg.Sequence, msg: m.curMsg}, true
		}
		if m.shown != nil && m.curPos > m.shown.res.LastSeq {
			return &recvAt{seq: m.curPos}, true
		}
	}
	r, ok := m.recv[m.curPos]
	return r, ok
}

// afterKnown asks, once the cursor has settled, what the consumer would
// receive from there and the plan of a reset to it (ForReset).
func (m *Model) afterKnown() tea.Cmd {
	if m.cfg.Kind != ForReset || m.cons == nil || !m.settled() {
		return nil
	}
	rc, ok := m.receivable()
	if ok {
		return m.askPlan(rc.seq, false)
	}
	pos := m.curPos
	if m.recvAsked[pos] {
		return nil
	}
	m.recvAsked[pos] = true
	stream, filters := m.stream, m.cons.Filters
	return tea.Batch(func() tea.Msg {
		r, err := m.src.At(m.ctx, stream, pos, filters, 0)
		if err != nil {
			return recvMsg{pos: pos, err: err}
		}
		return recvMsg{pos: pos, at: &recvAt{seq: r.Sequence, msg: r.Message}}
	}, m.spinCmd())
}

// askPlan asks for the plan of a reset to seq: the one-line plan, or the
// review's (with the messages it redelivers or skips).
func (m *Model) askPlan(seq uint64, review bool) tea.Cmd {
	show := 0
	if review {
		show = m.cfg.ShowMessages
	} else {
		if _, ok := m.plans[seq]; ok {
			return nil
		}
		if _, ok := m.planAsked[seq]; ok {
			return nil
		}
		m.planAsked[seq] = m.now()
	}
	stream, consumer := m.stream, m.consumer
	return tea.Batch(func() tea.Msg {
		pl, err := m.src.Plan(m.ctx, stream, consumer, seq, show)
		return planMsg{seq: seq, review: review, plan: pl, err: err}
	}, m.spinCmd())
}

func (m *Model) onPlan(msg planMsg) tea.Cmd {
	if msg.review {
		if m.screen == screenReview && msg.seq == m.reviewSeq {
			m.review, m.reviewErr, m.reviewSince = msg.plan, msg.err, time.Time{}
		}
		return nil
	}
	delete(m.planAsked, msg.seq)
	if msg.err != nil {
		m.planErr = msg.err
		return nil
	}
	m.plans[msg.seq], m.planErr = msg.plan, nil
	return nil
}

func (m *Model) startReview() tea.Cmd {
	rc, _ := m.receivable()
	m.screen, m.review, m.reviewErr, m.scroll = screenReview, nil, nil, 0
	m.reviewSeq, m.reviewSince, m.reviewRecv, m.reviewShown = rc.seq, m.now(), rc, m.curMsg
	return m.askPlan(rc.seq, true)
}

// buckets is the strip's number of buckets: one column each.
func (m *Model) buckets() int { return min(max(m.width-16, 10), 200) }

// around is how many neighbours a lookup asks on each side: more on a
// taller screen.
func (m *Model) around() int { return min(max((m.height-24)/2+2, 2), 10) }

func (m *Model) loadTimeline() tea.Cmd {
	k := tlKey{filter: m.fkey(), buckets: m.buckets()}
	if k == m.tlWant && m.tlErr == nil && (!m.tlSince.IsZero() || k == m.tlShown) {
		return nil // loading or loaded
	}
	m.tlWant, m.tlSince, m.tlErr, m.tlProgress = k, m.now(), nil, TimelineProgress{}
	stream := m.stream
	return tea.Batch(func() tea.Msg {
		res, err := m.src.Timeline(m.ctx, stream, splitFilter(k.filter), k.buckets)
		return timelineMsg{k, res, err}
	}, m.spinCmd())
}

func (m *Model) spinCmd() tea.Cmd {
	if m.spinOn {
		return nil
	}
	m.spinOn = true
	return tea.Tick(100*time.Millisecond, func(time.Time) tea.Msg { return spinMsg{} })
}

func (m *Model) busy() bool {
	switch m.screen {
	case screenStreams, screenConsumers:
		return m.loading
	case screenReview:
		return m.review == nil && m.reviewErr == nil
	}
	lookingUp := m.cur != (lookKey{}) && !m.settled() && m.lookErr == nil
	return m.loading || lookingUp || !m.tlSince.IsZero() || len(m.planAsked) > 0 || len(m.recvAsked) > 0
}
