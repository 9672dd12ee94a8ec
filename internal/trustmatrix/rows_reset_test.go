package trustmatrix

import (
	"encoding/json"
	"os"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil/reset"
)

// Hostile values written into records.
const (
	farFuture = "9999-12-31T23:59:59Z"
	longAgo   = "1970-01-01T00:00:01Z"
	huge      = json.Number("18446744073709551615")
)

// victim is the subject a hostile record points at: a request that would
// delete the cell's victim stream (no such stream exists; the cell fails
// when anything is published to it).
func (c *cell) victim() string { return "$JS.API.STREAM.DELETE.V" + c.tok }

// base makes S (20 messages) with consumers C and D, 10 acknowledged each.
func (c *cell) base() {
	c.t.Helper()
	c.stream(c.S, 20, "first")
	for _, n := range []string{c.C, c.D} {
		c.consumer(c.S, n)
		c.ack(c.S, n, 10)
	}
}

// hostileConfig makes a recorded consumer configuration hostile: push to
// the victim, no acks, one delivery, a filter that matches nothing.
func hostileConfig(c *cell, v any) any {
	cfg, _ := v.(map[string]any)
	if cfg == nil {
		cfg = map[string]any{}
	}
	cfg["deliver_subject"] = c.victim()
	cfg["ack_policy"] = "none"
	cfg["max_deliver"] = 1
	cfg["filter_subject"] = "nothing.zzz"
	return cfg
}

// hostileChange makes one change of a plan (or a history or intent
// record) hostile: impossible positions, creation times far ahead and
// long ago, a hostile configuration.
func hostileChange(c *cell, ch map[string]any) {
	if to, ok := ch["to"].(map[string]any); ok {
		to["sequence"] = huge
		to["time"] = farFuture
	} else {
		ch["to"] = map[string]any{"sequence": huge, "time": farFuture}
	}
	ch["created"] = farFuture
	ch["stream_created"] = longAgo
	if _, ok := ch["config"]; ok {
		ch["config"] = hostileConfig(c, ch["config"])
	}
	if _, ok := ch["new_config"]; ok {
		ch["new_config"] = hostileConfig(c, ch["new_config"])
	}
}

// planRow: a plan exported by `consumer reset ... --export FILE`, applied
// later with --from-file --execute. target are the target flags.
func planRow(name string, target func(other string) []string) row {
	return row{
		name: name, command: "consumer reset",
		record: func(c *cell) {
			c.base()
			c.file = c.path("plan.json")
			c.must(append(append([]string{"consumer", "reset", c.S, c.C}, target(c.D)...), "--export", c.file)...)
			c.must(append(append([]string{"consumer", "reset", c.S, c.D}, target(c.C)...), "--export", c.file+".other")...)
		},
		use: func(c *cell) []string { return []string{"consumer", "reset", "--from-file", c.file, "--execute"} },
		other: func(c *cell) {
			// D's plan (D's creation time), naming C.
			b, err := os.ReadFile(c.file + ".other")
			if err != nil {
				c.t.Fatal(err)
			}
			b = c.editJSON(b, func(m map[string]any) {
				for _, ch := range m["changes"].([]any) {
					ch.(map[string]any)["consumer"] = c.C
				}
			})
			if err := os.WriteFile(c.file, b, 0o644); err != nil {
				c.t.Fatal(err)
			}
		},
		hostile: func(c *cell) {
			c.editRecord(func(m map[string]any) {
				m["stream_created"] = longAgo
				for _, ch := range m["changes"].([]any) {
					hostileChange(c, ch.(map[string]any))
				}
			})
		},
		cells: map[fault]expect{
			fStream:     refuse("was deleted and created again since"),
			fSame:       refuse("was deleted and created again since"),
			fOtherCfg:   refuse("was deleted and created again since"),
			fEdited:     holds("verified"),
			fUnparsable: refuseCode(2, "plan"),
			fOtherObj:   refuse("was deleted and created again since"),
			fHostile:    refuseCode(2, "lies in the future"),
		},
	}
}

// historyRow: --to-previous undoes the last recorded reset.
func historyRow() row {
	return row{
		name: "consumer reset --to-previous", command: "consumer reset",
		record: func(c *cell) {
			c.base()
			c.must("consumer", "reset", c.S, c.C, "--to-seq", "2", "--execute")
			c.must("consumer", "reset", c.S, c.D, "--to-seq", "2", "--execute")
			c.bucket, c.key, c.otherKey = reset.HistoryBucket, reset.HistoryKey(c.S, c.C), reset.HistoryKey(c.S, c.D)
		},
		use: func(c *cell) []string { return []string{"consumer", "reset", c.S, c.C, "--to-previous", "--execute"} },
		hostile: func(c *cell) {
			c.editRecord(func(m map[string]any) { hostileChange(c, m) })
		},
		cells: map[fault]expect{
			fStream:     refuse("was deleted and created again since"),
			fSame:       refuse("was deleted and created again since"),
			fOtherCfg:   refuse("was deleted and created again since"),
			fEdited:     holds("verified"),
			fUnparsable: refuseCode(2, "its latest history record cannot be used"),
			fOtherObj:   refuseCode(2, "stored under another consumer's key"),
			fHostile:    refuseCode(2, "lies in the future"),
		},
	}
}

// recordsRow: the plan of a reset lists the ack records (jsctl consume's)
// in the range it replays; --forget-acks deletes them.
func recordsRow() row {
	return row{
		name: "consumer reset --forget-acks (ack records)", command: "consumer reset",
		record: func(c *cell) { c.acksBase(10) },
		use: func(c *cell) []string {
			// The text plan: its warnings are what the cell's words are
			// looked for in (--json escapes their quotes, and its
			// "warnings" key would pass a cell that said nothing).
			return []string{"consumer", "reset", c.S, c.C, "--to-seq", "1", "--forget-acks", "--execute"}
		},
		acts: true,
		hostile: func(c *cell) {
			c.editRecord(func(m map[string]any) { hostileAck(c, m) })
		},
		check: func(c *cell, f fault, r result) {
			// The reset itself is for C: whatever the records say.
			if ci := c.info(c.S, c.C); ci == nil || ci.Delivered.Stream != 0 {
				c.t.Errorf("the reset did not move %s to 1: %+v", c.C, ci)
			}
		},
		cells: map[fault]expect{
			fStream:     skip("proves nothing"),
			fSame:       holds(""),
			fOtherCfg:   holds(""),
			fEdited:     notApplicable("an ack record says what was done with a message; the consumer's configuration is not in it"),
			fUnparsable: skip(`ack record "{key}"`),
			fOtherObj:   skip(`"{key}"`),
			fHostile:    skip(""),
		},
	}
}

// intentRow: an unfinished change left by a killed run (the record a
// `reset --method recreate --pause` writes before it deletes the
// consumer), read by args.
func intentRow(name, command string, args func(c *cell) []string, acts bool) row {
	r := row{
		name: name, command: command,
		record: func(c *cell) {
			c.base()
			c.intent(c.C)
			c.intent(c.D)
			c.bucket, c.key, c.otherKey = reset.IntentBucket, reset.HistoryKey(c.S, c.C), reset.HistoryKey(c.S, c.D)
		},
		use:  args,
		acts: acts,
		hostile: func(c *cell) {
			c.editRecord(func(m map[string]any) { hostileChange(c, m) })
		},
	}
	return r
}

// intent writes the intent record a `consumer reset S name --to-seq 2
// --method recreate --pause` leaves when killed before the delete, and
// pauses the consumer as it had.
func (c *cell) intent(name string) {
	c.t.Helper()
	msg, err := c.srv.nc.Request("$JS.API.CONSUMER.INFO."+c.S+"."+name, nil, 10*time.Second)
	if err != nil {
		c.t.Fatal(err)
	}
	var raw struct {
		Config  json.RawMessage `json:"config"`
		Created time.Time       `json:"created"`
	}
	if err := json.Unmarshal(msg.Data, &raw); err != nil {
		c.t.Fatal(err)
	}
	s, err := c.js.Stream(c.ctx(), c.S)
	if err != nil {
		c.t.Fatal(err)
	}
	until := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	created, streamCreated := raw.Created.UTC(), s.CachedInfo().Created.UTC()
	in := reset.Intent{
		ID: "c0ffee" + name, Stream: c.S, Consumer: name, Method: reset.Recreate,
		Target: reset.Target{Kind: reset.ToSeq, Seq: 2}, Config: raw.Config, Created: &created, StreamCreated: &streamCreated,
		To: reset.To{Sequence: 2}, Time: time.Now().UTC(), User: "ops", Host: "box",
		Pause: &reset.PauseIntent{Until: until, Resume: true},
	}
	val, err := json.Marshal(in)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.js.PauseConsumer(c.ctx(), c.S, name, until); err != nil {
		c.t.Fatal(err)
	}
	c.ensureBucket(reset.IntentBucket)
	c.kvPut(reset.IntentBucket, reset.HistoryKey(c.S, name), val)
}

func hasAny(s string, subs ...string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}
