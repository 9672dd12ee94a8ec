package picker

import (
	"context"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/jsctl/jsctl/jsutil/seek"
)

type screen int

const (
	screenStreams screen = iota
	screenConsumers
	screenPick
	screenReview
)

// input is a line the user is typing on the pick screen.
type input int

const (
	inputNone input = iota
	inputTime
	inputFilter
)

// seekKey identifies a cursor position's answer.
type seekKey struct {
	unix    int64
	mode    seek.Mode
	subject string
}

// Messages the model sends itself.
type (
	streamsMsg struct {
		rows []StreamRow
		err  error
	}
	consumersMsg struct {
		stream string
		rows   []ConsumerRow
		err    error
	}
	timelineMsg struct {
		subject string
		res     *seek.TimelineResult
		err     error
	}
	seekMsg struct {
		key seekKey
		res *seek.Result
		err error
	}
	// startMsg is the answer that places the first cursor.
	startMsg struct {
		t   time.Time
		err error
	}
	planMsg struct {
		key    seekKey
		review bool
		plan   *reset.Plan
		err    error
	}
	debounceMsg struct{ gen int }
	spinMsg     struct{}
)

// Model is the picker's bubbletea model.
type Model struct {
	ctx context.Context
	src Source
	cfg Config

	screen        screen
	width, height int

	// Choose lists.
	streams   []StreamRow
	consumers []ConsumerRow
	filter    string
	sel       int
	loading   bool // a list or the first cursor is loading

	stream, consumer string
	cons             *ConsumerRow

	// Pick.
	cursor  time.Time
	mode    seek.Mode
	subject string
	gen     int
	cache   map[seekKey]*seek.Result
	errs    map[seekKey]error
	shown   *seek.Result // the last answer shown
	shownAt seekKey
	waiting int // lookups in flight
	spin    int
	spinOn  bool
	plans   map[seekKey]*reset.Plan
	planErr error

	timeline    *seek.TimelineResult
	timelineErr error

	input     input
	text      string
	inputErr  string
	statusErr error

	// Review.
	review    *reset.Plan
	reviewKey seekKey
	reviewErr error

	out      Outcome
	quitting bool
}

// New makes the model; run it with tea.NewProgram. ctx bounds the
// requests it makes.
func New(ctx context.Context, src Source, cfg Config) *Model {
	if cfg.Mode == "" {
		cfg.Mode = seek.After
	}
	if cfg.Loc == nil {
		cfg.Loc = time.UTC
	}
	if cfg.Debounce <= 0 {
		cfg.Debounce = 25 * time.Millisecond
	}
	if cfg.ShowMessages <= 0 {
		cfg.ShowMessages = 10
	}
	if cfg.Buckets <= 0 {
		cfg.Buckets = 50
	}
	m := &Model{
		ctx: ctx, src: src, cfg: cfg, width: 80, height: 24,
		stream: cfg.Stream, consumer: cfg.Consumer, mode: cfg.Mode, subject: cfg.Subject,
		cache: map[seekKey]*seek.Result{}, errs: map[seekKey]error{}, plans: map[seekKey]*reset.Plan{},
	}
	switch {
	case m.stream == "":
		m.screen = screenStreams
	case cfg.Kind == ForReset && m.consumer == "":
		m.screen = screenConsumers
	default:
		m.screen = screenPick
	}
	return m
}

// Outcome is how the picker ended (read it after the program returns).
func (m *Model) Outcome() Outcome { return m.out }

// Init starts loading what the first screen shows.
func (m *Model) Init() tea.Cmd {
	switch m.screen {
	case screenStreams:
		return m.loadStreams()
	case screenConsumers:
		return m.loadConsumers()
	}
	return m.startPick()
}

// startPick enters the pick screen: it reads the consumer (ForReset), the
// timeline, and the first cursor time.
func (m *Model) startPick() tea.Cmd {
	m.screen, m.loading = screenPick, true
	stream := m.stream
	cmds := []tea.Cmd{m.loadTimeline()}
	if m.cfg.Kind == ForReset && m.cons == nil {
		cmds = append(cmds, func() tea.Msg {
			rows, err := m.src.Consumers(m.ctx, stream)
			return consumersMsg{stream, rows, err}
		})
		return tea.Batch(cmds...) // the cursor starts once the consumer is known
	}
	return tea.Batch(append(cmds, m.firstCursor())...)
}

// firstCursor places the cursor: Config.Start, the consumer's ack floor
// time, or the stream's last message time (each to the second).
func (m *Model) firstCursor() tea.Cmd {
	if m.subject == "" && m.cons != nil && len(m.cons.Filters) == 1 {
		m.subject = m.cons.Filters[0]
	}
	switch {
	case !m.cfg.Start.IsZero():
		return m.setCursor(m.cfg.Start)
	case m.cons != nil && m.cons.AckFloorTime != nil:
		return m.setCursor(*m.cons.AckFloorTime)
	}
	stream, subject := m.stream, m.subject
	return func() tea.Msg {
		r, err := m.src.Seek(m.ctx, stream, time.Now().Add(time.Hour), seek.Before, subject)
		if err != nil {
			return startMsg{err: err}
		}
		if r.Message == nil {
			return startMsg{t: time.Now()}
		}
		return startMsg{t: r.Message.Time}
	}
}

func (m *Model) loadTimeline() tea.Cmd {
	stream, subject, n := m.stream, m.subject, m.cfg.Buckets
	return func() tea.Msg {
		res, err := m.src.Timeline(m.ctx, stream, subject, n)
		return timelineMsg{subject, res, err}
	}
}

func (m *Model) key() seekKey { return seekKey{m.cursor.Unix(), m.mode, m.subject} }

// setCursor moves the cursor to t (to the second) and shows its answer at
// once when cached, else after the debounce.
func (m *Model) setCursor(t time.Time) tea.Cmd {
	m.cursor = t.Truncate(time.Second)
	m.loading = false
	m.gen++
	if m.show() {
		return m.planCmd()
	}
	gen := m.gen
	return tea.Batch(tea.Tick(m.cfg.Debounce, func(time.Time) tea.Msg { return debounceMsg{gen} }), m.spinCmd())
}

// show displays the cached answer of the cursor, if any.
func (m *Model) show() bool {
	k := m.key()
	if r, ok := m.cache[k]; ok {
		m.shown, m.shownAt, m.statusErr = r, k, nil
		return true
	}
	if err, ok := m.errs[k]; ok {
		m.statusErr = err
		return true
	}
	return false
}

// settled says whether the screen shows the cursor's own answer.
func (m *Model) settled() bool {
	_, ok := m.cache[m.key()]
	_, bad := m.errs[m.key()]
	return ok || bad
}

func (m *Model) lookup() tea.Cmd {
	k := m.key()
	stream := m.stream
	m.waiting++
	return func() tea.Msg {
		res, err := m.src.Seek(m.ctx, stream, time.Unix(k.unix, 0), k.mode, k.subject)
		return seekMsg{k, res, err}
	}
}

// planCmd asks for the one-line plan of the cursor (ForReset).
func (m *Model) planCmd() tea.Cmd {
	if m.cfg.Kind != ForReset || m.consumer == "" {
		return nil
	}
	k := seekKey{m.cursor.Unix(), m.mode, ""}
	if _, ok := m.plans[k]; ok {
		return nil
	}
	stream, consumer := m.stream, m.consumer
	return func() tea.Msg {
		pl, err := m.src.Plan(m.ctx, stream, consumer, time.Unix(k.unix, 0), k.mode, 0)
		return planMsg{key: k, plan: pl, err: err}
	}
}

func (m *Model) spinCmd() tea.Cmd {
	if m.spinOn {
		return nil
	}
	m.spinOn = true
	return tea.Tick(100*time.Millisecond, func(time.Time) tea.Msg { return spinMsg{} })
}

func (m *Model) busy() bool {
	return m.loading || (m.screen == screenPick && !m.settled()) || (m.screen == screenReview && m.review == nil && m.reviewErr == nil)
}

// Update handles keys, resizes and answers.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		return m, nil
	case spinMsg:
		m.spinOn = false
		if m.busy() {
			m.spin++
			return m, m.spinCmd()
		}
		return m, nil
	case streamsMsg:
		m.loading, m.streams, m.statusErr = false, msg.rows, msg.err
		return m, nil
	case consumersMsg:
		if msg.stream != m.stream {
			return m, nil
		}
		m.loading, m.statusErr = false, msg.err
		if m.screen == screenPick {
			for i := range msg.rows {
				if msg.rows[i].Name == m.consumer {
					m.cons = &msg.rows[i]
				}
			}
			if m.cons == nil && msg.err == nil {
				m.statusErr = errorf("consumer %q not found on stream %q", m.consumer, m.stream)
				return m, nil
			}
			return m, m.firstCursor()
		}
		m.consumers = msg.rows
		return m, nil
	case timelineMsg:
		if msg.subject == m.subject {
			m.timeline, m.timelineErr = msg.res, msg.err
		}
		return m, nil
	case startMsg:
		if msg.err != nil {
			m.loading, m.statusErr = false, msg.err
			return m, nil
		}
		return m, m.setCursor(msg.t)
	case debounceMsg:
		if msg.gen != m.gen || m.settled() {
			return m, nil
		}
		return m, m.lookup()
	case seekMsg:
		m.waiting--
		if msg.err != nil {
			m.errs[msg.key] = msg.err
		} else {
			m.cache[msg.key] = msg.res
		}
		if msg.key == m.key() {
			m.show()
			return m, m.planCmd()
		}
		return m, nil
	case planMsg:
		if msg.review {
			if msg.key == m.reviewKey && m.screen == screenReview {
				m.review, m.reviewErr = msg.plan, msg.err
			}
			return m, nil
		}
		if msg.err != nil {
			m.planErr = msg.err
			return m, nil
		}
		m.planErr = nil
		m.plans[msg.key] = msg.plan
		return m, nil
	case tea.KeyPressMsg:
		return m.onKey(msg)
	case tea.PasteMsg:
		if m.input != inputNone {
			m.text += msg.Content
		} else if m.screen == screenStreams || m.screen == screenConsumers {
			m.filter, m.sel = m.filter+msg.Content, 0
		}
		return m, nil
	}
	return m, nil
}

func (m *Model) quit(done bool) (tea.Model, tea.Cmd) {
	m.quitting = true
	m.out = Outcome{Done: done, Stream: m.stream, Consumer: m.consumer, Time: m.cursor, Mode: m.mode, Subject: m.subject}
	if done && m.cfg.Kind == ForReset {
		m.out.Plan = m.review
	}
	return m, tea.Quit
}

func (m *Model) onKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	if k.String() == "ctrl+c" {
		return m.quit(false)
	}
	if rs := []rune(k.Text); len(rs) > 1 && k.Mod == 0 {
		// Keys typed quickly may arrive together ("t" and the time after
		// it): each is a key of its own.
		var cmds []tea.Cmd
		for _, r := range rs {
			if m.quitting {
				break
			}
			_, c := m.onKey(tea.KeyPressMsg{Code: r, Text: string(r)})
			cmds = append(cmds, c)
		}
		return m, tea.Batch(cmds...)
	}
	switch m.screen {
	case screenStreams, screenConsumers:
		return m.onListKey(k)
	case screenReview:
		return m.onReviewKey(k)
	}
	if m.input != inputNone {
		return m.onInputKey(k)
	}
	switch k.String() {
	case "q", "esc":
		return m.quit(false)
	case "left":
		return m, m.move(-time.Second)
	case "right":
		return m, m.move(time.Second)
	case "[":
		return m, m.move(-time.Minute)
	case "]":
		return m, m.move(time.Minute)
	case "pgup":
		return m, m.move(-time.Hour)
	case "pgdown":
		return m, m.move(time.Hour)
	case "up":
		return m, m.step(-1)
	case "down":
		return m, m.step(1)
	case "m":
		switch m.mode {
		case seek.After:
			m.mode = seek.Before
		case seek.Before:
			m.mode = seek.Nearest
		default:
			m.mode = seek.After
		}
		return m, m.setCursor(m.cursor)
	case "t":
		m.input, m.text, m.inputErr = inputTime, "", ""
		return m, nil
	case "f":
		m.input, m.text, m.inputErr = inputFilter, m.subject, ""
		return m, nil
	case "enter":
		if m.cursor.IsZero() || !m.settled() {
			return m, nil
		}
		if m.cfg.Kind == ForSeek {
			return m.quit(true)
		}
		return m, m.startReview()
	}
	return m, nil
}

func (m *Model) move(d time.Duration) tea.Cmd {
	if m.cursor.IsZero() {
		return nil
	}
	return m.setCursor(m.cursor.Add(d))
}

// step moves the cursor to the time of the previous (dir -1) or next
// message within the filter, from the neighbours of the shown answer: the
// nearest one in another second, since the cursor moves by whole seconds.
func (m *Model) step(dir int) tea.Cmd {
	r := m.shown
	if r == nil || m.cursor.IsZero() {
		return nil
	}
	sec := m.cursor
	if r.Message != nil {
		sec = r.Message.Time.Truncate(time.Second)
	}
	var pick *seek.Message
	for i := range r.Neighbours {
		n := &r.Neighbours[i]
		ns := n.Time.Truncate(time.Second)
		if dir > 0 && ns.After(sec) && (r.Message != nil || !n.Time.Before(m.cursor)) {
			pick = n
			break
		}
		if dir < 0 && ns.Before(sec) {
			pick = n
		}
	}
	if pick == nil {
		return m.move(time.Duration(dir) * time.Second)
	}
	t := pick.Time.Truncate(time.Second)
	if m.mode == seek.Before && !t.Equal(pick.Time) {
		t = t.Add(time.Second) // the last message at or before t
	}
	return m.setCursor(t)
}

func (m *Model) onInputKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch k.String() {
	case "esc":
		m.input = inputNone
		return m, nil
	case "backspace":
		if r := []rune(m.text); len(r) > 0 {
			m.text = string(r[:len(r)-1])
		}
		return m, nil
	case "enter":
		text := strings.TrimSpace(m.text)
		if m.input == inputFilter {
			m.input = inputNone
			if text == m.subject {
				return m, nil
			}
			m.subject, m.timeline, m.timelineErr = text, nil, nil
			return m, tea.Batch(m.loadTimeline(), m.setCursor(m.cursor))
		}
		t, err := m.src.ParseTime(text)
		if err != nil {
			m.inputErr = err.Error()
			return m, nil
		}
		m.input = inputNone
		return m, m.setCursor(t)
	default:
		m.text += k.Text
	}
	return m, nil
}

func (m *Model) startReview() tea.Cmd {
	m.screen, m.review, m.reviewErr = screenReview, nil, nil
	m.reviewKey = m.key()
	k, stream, consumer, n := m.reviewKey, m.stream, m.consumer, m.cfg.ShowMessages
	return tea.Batch(func() tea.Msg {
		pl, err := m.src.Plan(m.ctx, stream, consumer, time.Unix(k.unix, 0), k.mode, n)
		return planMsg{key: k, review: true, plan: pl, err: err}
	}, m.spinCmd())
}

func (m *Model) onReviewKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch k.String() {
	case "y":
		if m.review != nil && m.review.Err() == nil {
			return m.quit(true)
		}
	case "n", "esc":
		m.screen, m.review, m.reviewErr = screenPick, nil, nil
	case "q":
		return m.quit(false)
	}
	return m, nil
}
