package reset

import (
	"context"
	"slices"
	"time"

	"github.com/jsctl/jsctl/jsutil/seek"
)

// Kinds of the messages a change lists (Change.MessagesKind).
const (
	MessagesRedeliver = "redeliver" // the consumer delivers them again
	MessagesSkip      = "skip"      // the consumer will not deliver them
)

// Message is one message a change redelivers or skips.
type Message struct {
	Seq     uint64    `json:"seq"`
	Time    time.Time `json:"time"`
	Subject string    `json:"subject"`
	Size    int       `json:"size"`
}

// listMessages fills, with Options.ShowMessages N, the change's Messages:
// up to N of the messages it redelivers (a move back) or else skips (a
// move forward), within the consumer's filters, the first (N+1)/2 and the
// last N/2 of them, and MessagesTotal, their count (Redeliver or Skip).
func (p *planner) listMessages(ctx context.Context, c *Change) error {
	n := p.opts.ShowMessages
	if n <= 0 {
		return nil
	}
	var from, to, total uint64
	switch {
	case c.Redeliver != nil && *c.Redeliver > 0:
		c.MessagesKind, from, to, total = MessagesRedeliver, c.To.Sequence, c.From.Delivered, *c.Redeliver
	case c.Skip != nil && *c.Skip > 0:
		c.MessagesKind, from, to, total = MessagesSkip, c.From.AckFloor+1, c.To.Sequence-1, *c.Skip
	case c.Redeliver == nil || c.Skip == nil:
		return nil // how many is unknown (a warning says why): no list
	}
	c.Messages, c.MessagesTotal = []Message{}, &total
	if total == 0 {
		c.MessagesKind = ""
		return nil
	}
	first, last := (n+1)/2, n/2
	subjects := c.Filters
	if len(subjects) == 0 {
		subjects = []string{""}
	}
	var all []seek.Message
	for _, subj := range subjects {
		ms, err := seek.Range(ctx, p.js, c.Stream, from, to, subj, first, last)
		if err != nil {
			return wrapConsumer(err, c.Stream, c.Consumer)
		}
		all = append(all, ms...)
	}
	slices.SortFunc(all, func(a, b seek.Message) int {
		switch {
		case a.Sequence < b.Sequence:
			return -1
		case a.Sequence > b.Sequence:
			return 1
		}
		return 0
	})
	all = slices.CompactFunc(all, func(a, b seek.Message) bool { return a.Sequence == b.Sequence })
	if len(all) > n {
		all = append(all[:first:first], all[len(all)-last:]...)
	}
	for _, m := range all {
		c.Messages = append(c.Messages, Message{Seq: m.Sequence, Time: m.Time.UTC(), Subject: m.Subject, Size: m.Size})
	}
	return nil
}
