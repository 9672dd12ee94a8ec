package jsutil

import "sync"

// Tally counts the steps of work done concurrently and reports each count
// to a progress callback (done, total). The count and its report are one
// step under one lock: workers that finish together report in order, one
// more each time, never going back (17 of 20 after 20 of 20), and no two
// reports overlap.
type Tally struct {
	mu          sync.Mutex
	fn          func(done, total int)
	done, total int
}

// NewTally returns a tally of total steps that reports to fn (nil: it only
// counts).
func NewTally(fn func(done, total int), total int) *Tally {
	return &Tally{fn: fn, total: total}
}

// Start reports 0 done.
func (t *Tally) Start() { t.add(0) }

// Grow adds one step still to do, reported with the next step done.
func (t *Tally) Grow() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total++
}

// Step counts one more step done and reports the count.
func (t *Tally) Step() { t.add(1) }

// add adds done to the count and reports it.
func (t *Tally) add(done int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done += done
	if t.fn != nil {
		t.fn(t.done, t.total)
	}
}
