package picker

import (
	"context"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/jsctl/jsctl/jsutil"
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

// lookKey identifies a cursor position's answer: a time with its mode, or
// a message (the first at or after seq), within a filter.
type lookKey struct {
	seq    uint64    // > 0: the first message at or after seq
	at     int64     // the time (UnixNano), when seq is 0
	mode   seek.Mode // with at
	filter string    // the filter in force (filterKey)
}

// answer is an answer with the number of neighbours asked on each side.
type answer struct {
	key    lookKey
	res    *seek.Result
	around int
}

// tlKey identifies a timeline.
type tlKey struct {
	filter  string
	buckets int
}

// recvAt is the first message the consumer receives from a position on.
type recvAt struct {
	seq uint64        // its sequence (the stream's last + 1 when none yet)
	msg *seek.Message // nil when there is none yet
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
		key tlKey
		res *seek.TimelineResult
		err error
	}
	lookMsg struct {
		ans *answer
		err error
	}
	// lastMsg is the last message within the filter (seek -i starts there).
	lastMsg struct {
		filter string
		msg    *seek.Message
		err    error
	}
	recvMsg struct {
		pos uint64
		at  *recvAt
		err error
	}
	planMsg struct {
		seq    uint64
		review bool
		plan   *reset.Plan
		err    error
	}
	debounceMsg struct{ gen int }
	resizeMsg   struct{ gen int }
	spinMsg     struct{}
)

// Model is the picker's bubbletea model.
type Model struct {
	ctx context.Context
	src Source
	cfg Config
	now func() time.Time

	screen        screen
	width, height int

	// Choose lists.
	streams   []StreamRow
	consumers []ConsumerRow
	filter    string
	sel       int
	loading   bool // a list, the consumer or the first cursor is loading
	loadSince time.Time
	listErr   error

	stream, consumer string
	cons             *ConsumerRow

	// Pick: the cursor.
	mode    seek.Mode
	preview string
	cur     lookKey       // the cursor's key
	curTime time.Time     // the time shown (zero: none)
	curPos  uint64        // the cursor's position: the Sequence shown
	curMsg  *seek.Message // the message there (nil: none)
	known   bool          // curPos and curMsg are the cursor's own
	shown   *answer       // the answer whose neighbours are on screen
	pending int           // ↑/↓ steps waiting for the cursor's answer
	gen     int
	cache   map[lookKey]*answer
	asked   map[lookKey]time.Time // lookups in flight, since when
	lookErr error                 // the cursor's lookup failed
	flash   string                // a note about the last key
	// What the consumer receives, and plans, by position.
	recv      map[uint64]*recvAt
	recvAsked map[uint64]bool
	recvErr   error
	plans     map[uint64]*reset.Plan
	planAsked map[uint64]time.Time
	planErr   error

	timeline   *seek.TimelineResult
	tlShown    tlKey
	tlWant     tlKey
	tlErr      error
	tlSince    time.Time // the wanted timeline is loading since (zero: not)
	tlProgress TimelineProgress
	resizeGen  int

	input    input
	text     string
	inputErr string
	notice   string

	spin   int
	spinOn bool

	// Review.
	review      *reset.Plan
	reviewSeq   uint64
	reviewRecv  *recvAt       // the first message the consumer receives
	reviewShown *seek.Message // the message shown when Enter was pressed
	reviewErr   error
	reviewSince time.Time
	scroll      int

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
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	m := &Model{
		ctx: ctx, src: src, cfg: cfg, now: now, width: 80, height: 24,
		stream: cfg.Stream, consumer: cfg.Consumer, mode: cfg.Mode, preview: cfg.Preview,
	}
	m.clearPick()
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

// clearPick forgets every answer (another stream or consumer).
func (m *Model) clearPick() {
	m.cache, m.asked = map[lookKey]*answer{}, map[lookKey]time.Time{}
	m.recv, m.recvAsked = map[uint64]*recvAt{}, map[uint64]bool{}
	m.plans, m.planAsked = map[uint64]*reset.Plan{}, map[uint64]time.Time{}
	m.shown, m.known, m.curPos, m.curMsg, m.curTime, m.cur = nil, false, 0, nil, time.Time{}, lookKey{}
	m.timeline, m.tlShown, m.tlWant, m.tlErr, m.tlSince = nil, tlKey{}, tlKey{}, nil, time.Time{}
	m.lookErr, m.recvErr, m.planErr, m.pending = nil, nil, nil, 0
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

// subjects is the filter in force: the preview filter, else the
// consumer's own filters (none: all subjects).
func (m *Model) subjects() []string {
	if m.preview != "" {
		return []string{m.preview}
	}
	if m.cons != nil {
		return m.cons.Filters
	}
	return nil
}

// filterKey names a set of filter subjects (which hold no spaces).
func filterKey(subjects []string) string { return strings.Join(subjects, " ") }

func splitFilter(key string) []string {
	if key == "" {
		return nil
	}
	return strings.Split(key, " ")
}

// ownFilter says whether the filter in force is the consumer's own.
func (m *Model) ownFilter() bool {
	return m.cons != nil && filterKey(m.subjects()) == filterKey(m.cons.Filters)
}

// Update handles keys, resizes and answers.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		if m.screen == screenPick || m.screen == screenReview {
			// Resizes come in bursts: the strip and the neighbours are
			// asked again for the size the terminal settles on.
			m.resizeGen++
			gen := m.resizeGen
			return m, tea.Tick(150*time.Millisecond, func(time.Time) tea.Msg { return resizeMsg{gen} })
		}
		return m, nil
	case resizeMsg:
		if msg.gen != m.resizeGen || m.screen != screenPick {
			return m, nil
		}
		var cmds []tea.Cmd
		if m.tlWant.buckets != 0 && m.buckets() != m.tlWant.buckets {
			cmds = append(cmds, m.loadTimeline())
		}
		if a := m.cache[m.cur]; a != nil && m.settled() && a.around < m.around() {
			if _, inFlight := m.asked[m.cur]; !inFlight {
				cmds = append(cmds, m.lookup(m.cur)) // more neighbours fit now
			}
		}
		return m, tea.Batch(cmds...)
	case spinMsg:
		m.spinOn = false
		if m.busy() {
			m.spin++
			return m, m.spinCmd()
		}
		return m, nil
	case Notice:
		m.notice = msg.Text
		return m, nil
	case TimelineProgress:
		m.tlProgress = msg
		return m, nil
	case streamsMsg:
		m.loading, m.streams, m.listErr = false, msg.rows, msg.err
		m.answered(msg.err)
		return m, nil
	case consumersMsg:
		return m.onConsumers(msg)
	case timelineMsg:
		m.answered(msg.err)
		if msg.key != m.tlWant {
			return m, nil
		}
		m.tlSince = time.Time{}
		if msg.err != nil {
			m.tlErr = msg.err
			return m, nil
		}
		m.timeline, m.tlShown, m.tlErr = msg.res, msg.key, nil
		return m, nil
	case lastMsg:
		m.answered(msg.err)
		return m, m.onLast(msg)
	case lookMsg:
		return m, m.onLook(msg)
	case recvMsg:
		m.answered(msg.err)
		delete(m.recvAsked, msg.pos)
		if msg.err != nil {
			m.recvErr = msg.err
			return m, nil
		}
		m.recv[msg.pos], m.recvErr = msg.at, nil
		return m, m.afterKnown()
	case planMsg:
		m.answered(msg.err)
		return m, m.onPlan(msg)
	case debounceMsg:
		if msg.gen != m.gen || m.settled() {
			return m, nil
		}
		if _, inFlight := m.asked[m.cur]; inFlight {
			return m, nil
		}
		return m, m.lookup(m.cur)
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

// answered clears the notice once the server has answered a request.
func (m *Model) answered(err error) {
	if err == nil {
		m.notice = ""
	}
}

func (m *Model) onConsumers(msg consumersMsg) (tea.Model, tea.Cmd) {
	if msg.stream != m.stream {
		return m, nil
	}
	m.answered(msg.err)
	m.loading, m.listErr = false, msg.err
	if m.screen != screenPick {
		m.consumers = msg.rows
		return m, nil
	}
	for i := range msg.rows {
		if msg.rows[i].Name == m.consumer {
			m.cons = &msg.rows[i]
		}
	}
	if m.cons == nil && msg.err == nil {
		m.listErr = errorf("consumer %q not found on stream %q", m.consumer, m.stream)
		return m, nil
	}
	if m.cons == nil {
		return m, nil
	}
	return m, m.openCursor()
}

func (m *Model) quit(done bool) (tea.Model, tea.Cmd) {
	m.quitting = true
	m.out = Outcome{Done: done, Stream: m.stream, Consumer: m.consumer, Time: m.curTime, Mode: m.mode, Preview: m.preview}
	if m.curMsg != nil {
		m.out.Time = m.curMsg.Time
	}
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
	m.flash = ""
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
		if m.curTime.IsZero() {
			return m, nil // no time to select by yet
		}
		return m, m.setTime(m.curTime)
	case "t":
		m.input, m.text, m.inputErr = inputTime, "", ""
		return m, nil
	case "f":
		m.input, m.text, m.inputErr = inputFilter, m.preview, ""
		return m, nil
	case "enter":
		if !m.settled() {
			return m, nil
		}
		if m.cfg.Kind == ForSeek {
			return m.quit(true)
		}
		if _, ok := m.receivable(); !ok {
			return m, nil
		}
		return m, m.startReview()
	}
	return m, nil
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
			if text != "" {
				if err := jsutil.CheckSubjectFilter("the preview filter", text); err != nil {
					m.inputErr = safe(err.Error())
					return m, nil
				}
			}
			m.input = inputNone
			if text == m.preview {
				return m, nil
			}
			m.preview = text
			return m, m.filterChanged()
		}
		t, err := m.src.ParseTime(text)
		if err != nil {
			m.inputErr = safe(err.Error())
			return m, nil
		}
		m.input = inputNone
		return m, m.setTime(t)
	default:
		m.text += k.Text
	}
	return m, nil
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
	case "up":
		m.scroll--
	case "down":
		m.scroll++
	case "pgup":
		m.scroll -= max(m.height-6, 1)
	case "pgdown":
		m.scroll += max(m.height-6, 1)
	}
	m.clampScroll()
	return m, nil
}
