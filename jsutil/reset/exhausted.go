package reset

import "strconv"

// Exhausted is what consumer info tells of the messages that had used up
// their MaxDeliver deliveries: the server gave up on them (moving the ack
// floor past them) but keeps their delivery counts. An in-place reset
// clears every delivery count (nats-server resetLocalStartingSeq sets the
// consumer's pending and redelivery maps to nil) and a recreate starts a
// consumer without any, so a change to a position at or before such a
// message makes it deliverable again, up to MaxDeliver more times.
//
// Consumer info does not count them, nor say which they are: its
// num_redelivered counts every message with a delivery count above one,
// those still awaiting acknowledgement (num_ack_pending at most) and those
// given up on. So AtLeast is num_redelivered − num_ack_pending (not below
// 0) and AtMost num_redelivered. With MaxDeliver 1 the server reports
// num_redelivered as 0 whatever happened: Known is false.
type Exhausted struct {
	MaxDeliver int  `json:"max_deliver"`
	Known      bool `json:"known"`
	AtLeast    int  `json:"at_least"`
	AtMost     int  `json:"at_most"`
}

// noteExhausted sets c.Exhausted, with a warning, when the change may make
// messages that had used up MaxDeliver deliverable again: the consumer
// has a MaxDeliver, and the target is at or before its last delivery (a
// message given up on was delivered, so it is at or before that).
func noteExhausted(c *Change) {
	if c.state == nil || c.state.info == nil {
		return
	}
	info := c.state.info
	md := info.Config.MaxDeliver
	if md <= 0 || c.To.Sequence == 0 || c.To.Sequence > info.Delivered.Stream {
		return
	}
	if md == 1 {
		c.Exhausted = &Exhausted{MaxDeliver: md}
		c.warn("the consumer has max_deliver 1, and the server does not report how many delivered messages went unacknowledged and were given up on; the change clears delivery counts, so any of them at or after sequence %d will be delivered once more", c.To.Sequence)
		return
	}
	r, pending := info.NumRedelivered, info.NumAckPending
	if r <= 0 {
		return // none has been delivered twice: none used up its deliveries
	}
	e := &Exhausted{MaxDeliver: md, Known: true, AtLeast: max(r-pending, 0), AtMost: r}
	c.Exhausted = e
	count := ""
	switch {
	case e.AtLeast == e.AtMost:
		count = strconv.Itoa(e.AtMost)
	case e.AtLeast == 0:
		count = "up to " + strconv.Itoa(e.AtMost)
	default:
		count = strconv.Itoa(e.AtLeast) + " to " + strconv.Itoa(e.AtMost)
	}
	noun := "messages"
	if e.AtMost == 1 {
		noun = "message"
	}
	c.warn("%s %s had used up max_deliver %d (the server reports %d redelivered, %d awaiting acknowledgement, not which ones); the change clears delivery counts, so those at or after sequence %d will be delivered again, up to %d times each",
		count, noun, md, r, pending, c.To.Sequence, md)
}
