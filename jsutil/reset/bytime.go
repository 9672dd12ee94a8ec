package reset

import (
	"context"
	"fmt"
	"time"
)

// moveSeq is the sequence a Move goes to and, where its position was saved
// on a stream deleted and created again since, the reason to refuse it:
// the saved sequence now names another message. The stream's creation
// time tells; a position saved by an older jsctl (no creation time) is
// checked by the time of its ack floor message, where the stream still
// holds one. With Options.ByTime the position is found by its saved time
// instead: the first message after the saved ack floor's time (the
// stream's first message when none was acknowledged), labelled in the
// change (ByTime, Reason).
func (p *planner) moveSeq(ctx context.Context, c *Change, m Move) (uint64, error) {
	stream := p.info.Config.Name
	why := p.streamCheck(m.StreamCreated, "the position was saved")
	if m.StreamCreated == nil && m.FloorTime != nil && m.Seq > 1 {
		if t := p.msgTime(ctx, m.Seq-1); t != nil && !t.Equal(*m.FloorTime) {
			why = fmt.Errorf("stream %q holds a message of %s at sequence %d now, not the saved one of %s (the stream was deleted and created again, or the position was saved elsewhere)",
				stream, timeText(t), m.Seq-1, timeText(m.FloorTime))
		}
	}
	if m.StreamCreated == nil && m.FloorTime != nil {
		c.warn("the saved position does not record when stream %q was created (saved by an older jsctl): checked only by its ack floor's time", stream)
	}
	if !p.opts.ByTime {
		return m.Seq, why
	}
	c.ByTime = true
	if m.FloorTime == nil || m.Seq <= 1 {
		first := max(p.info.State.FirstSeq, 1)
		c.warn("restored by time: no saved ack floor time, so from the stream's first message (%d)", first)
		return first, nil
	}
	seq, mt, err := p.opts.Seek(ctx, p.js, stream, m.FloorTime.Add(time.Nanosecond), ModeAfter, "")
	if err != nil {
		return m.Seq, fmt.Errorf("could not find the first message after the saved ack floor's time %s: %w", timeText(m.FloorTime), err)
	}
	if !mt.IsZero() {
		t := mt.UTC()
		c.To.Time = &t
	}
	c.warn("restored by time: the first message after the saved ack floor's time %s is sequence %d (saved: sequence %d)", timeText(m.FloorTime), seq, m.Seq)
	return seq, nil
}

// noteMove labels a change planned by time and records a refusal from
// moveSeq (once the change is complete, so the refusal is its own).
func (p *planner) noteMove(c *Change, m Move, refusal error) {
	if c.ByTime {
		c.Reason = "by time: " + c.Reason
	}
	if refusal != nil {
		c.refuseWith(refusal, "; pass --by-time to restore the position by its saved time")
	}
}
