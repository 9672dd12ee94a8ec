package trustmatrix

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil/positions"
	"github.com/jsctl/jsctl/jsutil/reset"
)

// hostileWalk makes every value of a recorded document hostile: each
// configuration (a "config" object) pushes to the victim without acks,
// each position and count is huge, each time lies far ahead.
func hostileWalk(c *cell, v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			switch {
			case k == "config" || k == "new_config":
				x[k] = hostileConfig(c, hostileWalk(c, e))
			default:
				x[k] = hostileWalk(c, e)
			}
		}
		for _, k := range []string{"floor", "ack_floor", "delivered", "sequence", "stream_seq", "consumer_seq", "seq", "last_seq", "first_seq"} {
			if _, ok := x[k].(json.Number); ok {
				x[k] = huge // the shape is kept: a number stays a number
			}
		}
		return x
	case []any:
		for i := range x {
			x[i] = hostileWalk(c, x[i])
		}
		return x
	case string:
		if _, err := time.Parse(time.RFC3339Nano, x); err == nil {
			return farFuture
		}
		return x
	}
	return v
}

func (c *cell) hostileDoc() {
	c.editRecord(func(m map[string]any) { hostileWalk(c, m) })
}

// snapshotRow: a snapshot saved by `consumer snapshot save N S c d`, read
// by use; the other object is snapshot O's document under N's key.
func snapshotRow(name, command string, acts bool, use func(c *cell) []string, cells map[fault]expect) row {
	return row{
		name: name, command: command, acts: acts, use: use, cells: cells,
		record: func(c *cell) {
			c.base()
			c.vals["snap"], c.vals["other"] = "n"+strings.ToLower(c.tok), "o"+strings.ToLower(c.tok)
			c.must("consumer", "snapshot", "save", c.vals["snap"], c.S, c.C)
			c.must("consumer", "snapshot", "save", c.vals["other"], c.S, c.D)
			c.bucket, c.key, c.otherKey = positions.Bucket, c.vals["snap"], c.vals["other"]
		},
		hostile: func(c *cell) { c.hostileDoc() },
	}
}

// mirrorRow: S (the origin, 10 messages old-N) is mirrored to M<tok>;
// consumer C of S has finished 2. The fault recreates S (5 new messages)
// and waits for M to copy them.
func mirrorRow(name, command string, use func(c *cell) []string, check func(c *cell, f fault, r result), stream expect, acts bool) row {
	noRecord := "a mirror's copies and their headers are written by the server; no client can write into a mirror"
	return row{
		name: name, command: command, use: use, check: check, acts: acts,
		streams: func(c *cell) []string { return []string{c.S, "M" + c.tok} },
		record: func(c *cell) {
			c.stream(c.S, 10, "old")
			if _, err := c.js.CreateStream(c.ctx(), mirrorConfig(c)); err != nil {
				c.t.Fatal(err)
			}
			c.waitMsgs("M"+c.tok, 10)
			c.consumer(c.S, c.C)
		},
		cells: map[fault]expect{
			fStream:     stream,
			fSame:       notApplicable("the origin consumer is read as it is now; nothing of it is recorded"),
			fOtherCfg:   notApplicable("the origin consumer is read as it is now; nothing of it is recorded"),
			fEdited:     notApplicable("the origin consumer is read as it is now; nothing of it is recorded"),
			fUnparsable: notApplicable(noRecord),
			fOtherObj:   notApplicable(noRecord),
			fHostile:    notApplicable(noRecord),
		},
	}
}

// historyListRow: consumer history lists the records of C.
func historyListRow() row {
	return row{
		name: "consumer history", command: "consumer history",
		record: func(c *cell) {
			c.base()
			c.must("consumer", "reset", c.S, c.C, "--to-seq", "2", "--execute")
			c.must("consumer", "reset", c.S, c.D, "--to-seq", "2", "--execute")
			c.bucket, c.key, c.otherKey = reset.HistoryBucket, reset.HistoryKey(c.S, c.C), reset.HistoryKey(c.S, c.D)
		},
		use:     func(c *cell) []string { return []string{"consumer", "history", c.S, c.C} },
		hostile: func(c *cell) { c.hostileDoc() },
	}
}
