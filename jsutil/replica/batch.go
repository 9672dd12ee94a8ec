package replica

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/seek"
	"github.com/nats-io/nats.go"
)

// Batched stepping. A probe that meets another source's message on a
// subject filter of its source steps over the messages after it on that
// filter; with several sources writing the same subjects, whose copies
// arrived in long runs, those are many. Rather than one message-get each,
// the search then reads them in batches (a batched direct get, nats-server
// ≥ 2.11, on a target with allow_direct), growing from firstBatch to
// maxBatch messages per request, and keeps the last batch of each filter
// for the next probes of the same search.
//
// Exactness: a batch holds every message matching the filter between the
// sequence it was asked from and its last message, so what lies in that
// range is known. What is beyond it, and that nothing matches (a batch
// found none, or said none is left), is always asked of the stream's
// leader with a single message get (seek.Reader.Next), since a direct get
// may be answered by a replica that has not stored the latest messages yet.
//
// A server that does not know batches (it answers one message without a
// pending count), refuses the request, or a target without allow_direct
// turns batching off for the rest of the translation: one message get per
// step, as before.
const (
	firstBatch   = 32
	maxBatch     = 2048
	maxBatchSize = 1 << 20 // bytes per batch (the server stops after the message that passes it)
)

// batcher is one translation's batched reads of the target.
type batcher struct {
	off bool // batches not used in this translation
}

// cursor is one subject filter's messages known to a search.
type cursor struct {
	filter string
	buf    []*seek.Message // every message matching filter in [lo, hi], in order
	lo, hi uint64          // the range buf covers (empty when hi < lo)
	end    bool            // the last batch said nothing matches after hi
	size   int             // the next batch's size
}

func newCursors(filters []string) []*cursor {
	cs := make([]*cursor, len(filters))
	for i, f := range filters {
		cs[i] = &cursor{filter: f, lo: 1, size: firstBatch}
	}
	return cs
}

// next returns the first message matching c's filter with sequence ≥ from
// (nil when none), read from what c holds when it covers from, otherwise
// with one request: a batch when step (the probe is stepping over other
// sources' messages) and batches are on, a single message get otherwise.
// limit is the probe's last sequence (a batch asks for no more).
func (t *translator) next(ctx context.Context, c *cursor, from, limit uint64, step bool) (*seek.Message, error) {
	if c.lo <= from && from <= c.hi {
		i := sort.Search(len(c.buf), func(i int) bool { return c.buf[i].Sequence >= from })
		if i < len(c.buf) {
			return c.buf[i], nil
		}
		if c.hi == math.MaxUint64 {
			return nil, nil
		}
		from = c.hi + 1
	} else {
		c.end = false
	}
	if from > limit {
		return nil, nil // none up to limit is all the probe asks
	}
	if step && !c.end && !t.batch.off {
		n := uint64(c.size)
		if span := limit - from + 1; span < n {
			n = span
		}
		msgs, end, ok, err := t.readBatch(ctx, from, c.filter, int(n))
		if err != nil {
			return nil, err
		}
		if ok && len(msgs) > 0 {
			c.buf, c.lo, c.hi, c.end = msgs, from, msgs[len(msgs)-1].Sequence, end
			c.size = min(c.size*4, maxBatch)
			return msgs[0], nil
		}
	}
	m, err := t.tr.Next(ctx, from, c.filter)
	if err != nil {
		return nil, err
	}
	c.lo, c.end = from, false
	if m == nil {
		c.buf, c.hi = nil, math.MaxUint64
	} else {
		c.buf, c.hi = []*seek.Message{m}, m.Sequence
	}
	return m, nil
}

// readBatch asks the target for up to n messages matching filter from seq
// on (one request). ok false: batches are off from now on (the server or
// the target does not offer them), and msgs is to be ignored. end says the
// server counted no more matching messages after the batch.
func (t *translator) readBatch(ctx context.Context, seq uint64, filter string, n int) (msgs []*seek.Message, end, ok bool, err error) {
	if !t.tinfo.Config.AllowDirect {
		t.batch.off = true
		return nil, false, false, nil
	}
	t.extra++
	body := fmt.Appendf(nil, `{"seq":%d,"next_by_subj":%s,"batch":%d,"max_bytes":%d}`, seq, strconv.Quote(filter), n, maxBatchSize)
	replies, err := jsutil.DirectBatch(ctx, t.target.JS, t.target.Stream, body, jsutil.RequestOptions{})
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, false, jsutil.Wrap(err, "read stream %q", t.target.Stream)
		}
		// Refused or unanswered: go on one message at a time.
		t.batch.off = true
		return nil, false, false, nil
	}
	for _, r := range replies {
		switch status := r.Header.Get("Status"); status {
		case "":
			m, good := batchMessage(r)
			if !good {
				t.batch.off = true
				return nil, false, false, nil
			}
			msgs = append(msgs, m)
		case "204": // end of batch
			end = r.Header.Get("Nats-Num-Pending") == "0"
		case "404": // none matches: the leader says so (see above)
			return nil, false, true, nil
		default:
			t.batch.off = true
			return nil, false, false, nil
		}
	}
	return msgs, end, true, nil
}

// batchMessage reads one message of a batch (false: not one, e.g. a single
// get's answer from a server that ignored the batch).
func batchMessage(r *nats.Msg) (*seek.Message, bool) {
	if r.Header.Get("Nats-Num-Pending") == "" {
		return nil, false
	}
	seq, err := strconv.ParseUint(r.Header.Get("Nats-Sequence"), 10, 64)
	if err != nil || seq == 0 {
		return nil, false
	}
	ts, _ := time.Parse(time.RFC3339Nano, r.Header.Get("Nats-Time-Stamp"))
	return &seek.Message{Sequence: seq, Time: ts, Subject: r.Header.Get("Nats-Subject"), Size: len(r.Data), Data: r.Data, Header: r.Header}, true
}
