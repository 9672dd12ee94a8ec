package acks

import (
	"context"
	"time"
)

// startFloor opens or extends the consumer's floor as the run starts (a
// range ending below the consumer's ack floor is not extended: the gap is
// not proven) and keeps a copy of it.
func (l *loop) startFloor(ctx context.Context) {
	l.moveFloor(ctx, floorPosOf(l.info, true))
}

// moveFloor advances the floor to p, keeps a copy, and reports a corrupt
// floor it replaced; it reports whether the floor was written.
func (l *loop) moveFloor(ctx context.Context, p floorPos) bool {
	l.mu.Lock()
	p.lastSeq = max(p.lastSeq, l.lastSeq)
	l.mu.Unlock()
	if p.stream == "" {
		p.stream = stamp(l.c.streamCreated)
	}
	f, corrupt, err := l.s.advanceFloor(ctx, l.ref, p)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lastSeq = max(l.lastSeq, p.lastSeq)
	for _, w := range f.Stale {
		l.warnLocked(w)
	}
	if corrupt != "" {
		l.warnLocked("the floor of consumer " + l.name + " in scope " + ScopeDisplay(l.ref.Scope) + " was corrupt and was replaced: " + corrupt)
	}
	if err != nil {
		return false
	}
	l.floor = f
	return true
}

// advanceFloor extends the consumer's floor to its ack floor when something
// was acked since the last time. At the end of a run (settle) it first
// gives the server a moment to apply the acks it was just sent (they are
// applied asynchronously), so the floor reaches the last message handled.
func (l *loop) advanceFloor(ctx context.Context, settle bool) {
	l.mu.Lock()
	progress, acked := l.progress, l.maxAcked
	l.progress = false
	l.mu.Unlock()
	if !progress {
		return
	}
	info, err := l.cons.Info(ctx)
	for try := 0; settle && err == nil && try < 10 && info.AckFloor.Stream < acked && info.NumAckPending > 0; try++ {
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
		info, err = l.cons.Info(ctx)
	}
	if err == nil && l.moveFloor(ctx, floorPosOf(info, false)) {
		return
	}
	l.mu.Lock()
	l.progress = true // try again next time
	l.mu.Unlock()
}

// covered implements floorSource with the loop's copy of the floor: only a
// message the copy covers is checked against the floor on the leader.
func (l *loop) covered(ctx context.Context, j *job) (bool, string, error) {
	l.mu.Lock()
	cached := l.floor
	l.mu.Unlock()
	if !cached.Covers(j.d.Seq, j.d.Subject) {
		return false, "", nil
	}
	fresh, err := l.s.ReadFloor(ctx, l.ref)
	if err != nil {
		return false, "", err
	}
	ok, why, err := l.s.trust(ctx, &fresh, j)
	if err == nil {
		l.mu.Lock()
		l.floor = fresh
		l.mu.Unlock()
	}
	return ok, why, err
}
