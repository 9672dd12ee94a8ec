package trustmatrix

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go/jetstream"
)

const acksBucket = "JSCTL_ACKS"

// ensureBucket creates bucket when it does not exist yet.
func (c *cell) ensureBucket(bucket string) {
	c.t.Helper()
	if _, err := c.js.KeyValue(c.ctx(), bucket); err == nil {
		return
	}
	if _, err := c.js.CreateKeyValue(c.ctx(), jetstream.KeyValueConfig{Bucket: bucket, History: 1}); err != nil && !strings.Contains(err.Error(), "exists") {
		c.t.Fatal(err)
	}
}

// ackKey is the record key of message seq of scope stream.consumer (the
// record consume made), "" when there is none.
func (c *cell) ackKey(consumer string, seq uint64) string {
	c.t.Helper()
	prefix := "r." + acks.DefaultScope(c.S, consumer) + "."
	for _, k := range c.kvKeys(acksBucket, prefix) {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		var v struct {
			Seq uint64 `json:"q"`
		}
		if json.Unmarshal(c.kvGet(acksBucket, k), &v) == nil && v.Seq == seq {
			return k
		}
	}
	return ""
}

// ackRecordKeys sets the cell's record: message 3's record of C, and of D.
func (c *cell) ackRecordKeys() {
	c.t.Helper()
	c.bucket, c.key, c.otherKey = acksBucket, c.ackKey(c.C, 3), c.ackKey(c.D, 3)
	if c.key == "" || c.otherKey == "" {
		c.t.Fatalf("no records of message 3: %v", c.kvKeys(acksBucket, c.S))
	}
}

// hostileAck makes an ack record hostile: failed for good with a pending
// dead letter to the victim, and impossible numbers (a count of failures
// and deliveries no run can reach).
func hostileAck(c *cell, m map[string]any) {
	hostileDeadLetter(c, m)
	m["n"] = huge
	m["d"] = huge
}

// hostileDeadLetter makes an ack record failed for good with a pending
// dead letter to the victim, its numbers plausible.
func hostileDeadLetter(c *cell, m map[string]any) {
	m["s"] = "failed"
	m["r"] = "forged"
	m["n"] = 1
	m["t"] = true
	m["ls"] = c.victim()
	m["li"] = "jsctl-dl:forged"
	delete(m, "lt")
	delete(m, "lq")
}

// acksBase makes S with 10 messages (first-1..10); consume runs C and D
// over the first done of them, keyed by stream sequence (records that a
// recreated stream makes false: its sequence 3 is another message).
func (c *cell) acksBase(done int) {
	c.t.Helper()
	c.acksBaseExec(done, "true")
}

// acksBaseExec is acksBase with handler exec; with failingThree, message
// 3 fails for good (a final failed record, as acks retry reads).
func (c *cell) acksBaseExec(done int, exec string) {
	c.t.Helper()
	c.stream(c.S, 10, "first")
	for _, n := range []string{c.C, c.D} {
		c.consumer(c.S, n)
		r := c.run("consume", c.S, n, "--exec", exec, "--max", strconv.Itoa(done), "--key", "seq", "--max-failures", "1", "--no-progress")
		if r.code != 0 && (exec == "true" || r.code != 1) {
			c.t.Fatalf("record step failed: %s", r)
		}
	}
	c.ackRecordKeys()
	// Another object's record: message 5's, of D's scope.
	c.otherKey = c.ackKey(c.D, 5)
}

// handlerLog is a consume --exec that appends JSCTL_SEQ to a file of the
// cell's, and ran lists what it appended.
func (c *cell) handlerLog() string { return `echo "$JSCTL_SEQ" >> ` + c.path("ran") }

func (c *cell) ran() []string {
	b, _ := os.ReadFile(c.path("ran"))
	f := strings.Fields(string(b))
	sort.Strings(f)
	return f
}

// failingThree is a handler that fails message 3.
const failingThree = `test "$JSCTL_SEQ" != 3`

// ackRow is an acks command reading the records of C's scope: 10 done
// (sequence keys); with failing, message 3's record is failed for good.
func ackRow(name, command string, acts bool, use func(c *cell) []string, check func(c *cell, f fault, r result)) row {
	return ackRowOf(name, command, false, acts, use, check)
}

func ackRowOf(name, command string, failing, acts bool, use func(c *cell) []string, check func(c *cell, f fault, r result)) row {
	return row{
		name: name, command: command, acts: acts,
		record: func(c *cell) {
			if failing {
				c.acksBaseExec(10, failingThree)
				return
			}
			c.acksBase(10)
		},
		use:     use,
		check:   check,
		hostile: func(c *cell) { c.editRecord(func(m map[string]any) { hostileAck(c, m) }) },
	}
}

func scope(c *cell) string { return c.S + "." + c.C }

// consumeRow: consume over records of an earlier run (finding 1, 5, 6).
func consumeRow() row {
	return row{
		name: "consume", command: "consume", acts: true,
		record: func(c *cell) {
			c.stream(c.S, 5, "first")
			for _, n := range []string{c.C, c.D} {
				c.consumer(c.S, n)
				c.must("consume", c.S, n, "--exec", "true", "--max", "5", "--no-progress")
			}
			c.publish(c.S, 5, "more")
			c.bucket, c.key = acksBucket, c.ackKey(c.C, 3)
			// The record that does not parse is message 7's, which this
			// run is delivered.
			c.vals["garbage"] = strings.Replace(c.key, "first-3", "more-2", 1)
		},
		use: func(c *cell) []string {
			max := "5" // more-1..5 (second-1..5 on a recreated stream)
			if f := fault(c.vals["fault"]); f == fSame || f == fOtherCfg {
				max = "10" // a new consumer is delivered first-1..5 again
			}
			return []string{"consume", c.S, c.C, "--exec", c.handlerLog(), "--max", max, "--no-progress"}
		},
		other: func(c *cell) {
			// Message 3's record of D's scope, for message 7 of C's (the
			// key of first-3 under the key of more-2): another message.
			val := c.kvGet(acksBucket, c.ackKey(c.D, 3))
			c.kvPut(acksBucket, strings.Replace(c.key, "first-3", "more-2", 1), val)
		},
		hostile: func(c *cell) {
			// more-2 (message 7): failed for good, its dead letter pending
			// to the victim; more-3 (8): claimed with a lease that ran out
			// in 2001 and no TTL.
			k7 := strings.Replace(c.key, "first-3", "more-2", 1)
			k8 := strings.Replace(c.key, "first-3", "more-3", 1)
			c.kvPut(acksBucket, k7, []byte(fmt.Sprintf(`{"s":"failed","q":7,"r":"forged","n":1,"t":true,"ls":%q,"li":"jsctl-dl:forged"}`, c.victim())))
			c.kvPut(acksBucket, k8, []byte(`{"s":"claim","q":8,"w":"forged","f":1,"d":1,"x":1000000000000000000}`))
		},
		check: func(c *cell, f fault, r result) {
			got := strings.Join(c.ran(), ",")
			var want string
			switch f {
			case fStream:
				want = "1,2,3,4,5" // second-1..5, never seen
			case fHostile, fUnparsable:
				want = "10,6,8,9" // 7 is left for acks retry
			case fOtherObj:
				// Message 3's record under message 7's key: its payload is
				// another's, reported as a mismatch (--on-mismatch report).
				want = "10,6,8,9"
			default:
				want = "10,6,7,8,9"
			}
			if got != want {
				c.t.Errorf("handler ran for %q, want %q:\n%s", got, want, r)
			}
		},
	}
}
