package trustmatrix

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

func mirrorConfig(c *cell) jetstream.StreamConfig {
	return jetstream.StreamConfig{Name: "M" + c.tok, Mirror: &jetstream.StreamSource{Name: c.S}}
}

// waitMirror, after the origin was recreated (second-1..5), publishes
// second-6..15 to it and waits for the mirror to copy them: it takes
// origin sequences 11..15 only (it had copied up to 10 of the earlier
// origin), so it holds old-1..10 and second-11..15.
func (c *cell) waitMirror() {
	if c.vals["recreated"] != "" {
		c.publishFrom(c.S, 6, 15, "second")
		c.waitMsgs("M"+c.tok, 15)
	}
}

// Outcome shorthands.
var (
	recreated  = "was deleted and created again since"
	noEditHere = "the record holds positions of messages, not the consumer's configuration"
)

// matrix is every command that reads recorded state, with each fault's
// expected outcome.
func matrix() []row {
	intentCells := func(recover bool) map[fault]expect {
		if recover {
			return map[fault]expect{
				fStream:     skip("the change no longer applies; its consumers are left as they are"),
				fSame:       skip("deleted and created again by someone else since the change started"),
				fOtherCfg:   skip("deleted and created again by someone else since the change started"),
				fEdited:     skip("its configuration was changed by someone else since the change started (description, max_ack_pending): left as it is"),
				fUnparsable: skip("skipped record"),
				fOtherObj:   skip("skipped record"),
				fHostile:    skip("skipped record"),
			}
		}
		return map[fault]expect{
			fStream:     skip("does not apply to it: stream"),
			fSame:       skip("does not apply to it: consumer"),
			fOtherCfg:   skip("does not apply to it: consumer"),
			fEdited:     skip("does not apply to it: its configuration was changed by someone else"),
			fUnparsable: skip("skipped record"),
			fOtherObj:   skip("skipped record"),
			fHostile:    skip("skipped record"),
		}
	}
	rows := []row{
		planRow("consumer reset --from-file (plan file)", func(string) []string { return []string{"--to-seq", "3"} }),
		planRow("consumer reset --to-consumer (plan file)", func(other string) []string { return []string{"--to-consumer", other} }),
		historyRow(),
		recordsRow(),
	}
	rec := intentRow("consumer recover", "consumer recover", func(c *cell) []string {
		return []string{"consumer", "recover", c.S, "--execute"}
	}, true)
	rec.cells = intentCells(true)
	rec.check = func(c *cell, f fault, r result) {
		// C, the consumer whose record no longer applies (or could not be
		// read), is left as it is: created, positions, configuration.
		key := c.S + "/" + c.C
		if unpaused(c.before[key]) != unpaused(c.after[key]) {
			c.t.Errorf("recover changed %s:\n  %s\n->%s\n%s", key, c.before[key], c.after[key], r)
		}
	}
	ls := intentRow("consumer ls", "consumer ls", func(c *cell) []string { return []string{"consumer", "ls", c.S} }, false)
	ls.cells = intentCells(false)
	info := intentRow("consumer info", "consumer info", func(c *cell) []string { return []string{"consumer", "info", c.S, c.C} }, false)
	info.cells = intentCells(false)
	rows = append(rows, rec, ls, info)

	hist := historyListRow()
	hist.cells = map[fault]expect{
		fStream:     skip("is of an earlier stream"),
		fSame:       skip("is of an earlier consumer"),
		fOtherCfg:   skip("is of an earlier consumer"),
		fEdited:     notApplicable("history lists what was done; an edit since changes nothing in it"),
		fUnparsable: skip("JSCTL_RESET_HISTORY"),
		fOtherObj:   skip("JSCTL_RESET_HISTORY"),
		fHostile:    skip("JSCTL_RESET_HISTORY"),
	}
	rows = append(rows, hist)

	snapCells := func(restore bool) map[fault]expect {
		m := map[fault]expect{
			fStream:     skip(recreated),
			fSame:       skip(recreated),
			fOtherCfg:   skip(recreated),
			fEdited:     skip("max_ack_pending: 1000 -> 77"),
			fUnparsable: refuseCode(2, "is not a snapshot document"),
			fOtherObj:   skip(`names itself "o`),
			fHostile:    refuseCode(2, "lies in the future"),
		}
		if restore {
			m[fStream] = refuse(recreated)
			// The stream is the same: the saved positions are of its
			// messages, and restoring them (the snapshot's purpose) moves
			// the consumer of the name, keeping its configuration.
			m[fSame] = holds("was deleted and created again since the position was saved")
			m[fOtherCfg] = holds("its configuration differs from the saved one; only its position is changed")
			m[fEdited] = holds("its configuration differs from the saved one; only its position is changed")
			m[fOtherObj] = holds(`names itself "o`)
		}
		return m
	}
	snapName := func(c *cell) string { return c.vals["snap"] }
	listCells := map[fault]expect{
		fUnparsable: skip(`skipped record "{key}" in bucket JSCTL_SNAPSHOTS`),
		fOtherObj:   skip(`names itself "o`),
		fHostile:    skip(`skipped record "{key}" in bucket JSCTL_SNAPSHOTS`),
	}
	for _, f := range []fault{fStream, fSame, fOtherCfg, fEdited} {
		listCells[f] = notApplicable("ls lists the saved documents; it compares nothing with the consumers")
	}
	rows = append(rows,
		snapshotRow("consumer snapshot show", "consumer snapshot show", false, func(c *cell) []string {
			return []string{"consumer", "snapshot", "show", snapName(c)}
		}, snapCells(false)),
		snapshotRow("consumer snapshot restore", "consumer snapshot restore", false, func(c *cell) []string {
			return []string{"consumer", "snapshot", "restore", snapName(c), "--execute"}
		}, snapCells(true)),
		snapshotRow("consumer snapshot ls", "consumer snapshot ls", false, func(c *cell) []string {
			return []string{"consumer", "snapshot", "ls", c.S}
		}, listCells),
	)

	rm := snapshotRow("consumer snapshot rm", "consumer snapshot rm", true, func(c *cell) []string {
		return []string{"consumer", "snapshot", "rm", snapName(c), "--execute"}
	}, nil)
	rm.cells = map[fault]expect{}
	for _, f := range []fault{fStream, fSame, fOtherCfg, fEdited} {
		rm.cells[f] = notApplicable("rm removes the named document; it compares nothing with the consumers")
	}
	for _, f := range []fault{fUnparsable, fOtherObj, fHostile} {
		rm.cells[f] = holds("")
	}
	rm.check = func(c *cell, f fault, r result) {
		if c.kvGet(c.bucket, c.key) != nil || c.kvGet(c.bucket, c.otherKey) == nil {
			c.t.Errorf("rm %s: want that key gone and %s kept:\n%s", c.key, c.otherKey, r)
		}
	}
	save := ackRow("consumer snapshot save", "consumer snapshot save", true, func(c *cell) []string {
		return []string{"consumer", "snapshot", "save", "n" + strings.ToLower(c.tok), c.S, c.C}
	}, func(c *cell, f fault, r result) {
		if c.kvGet("JSCTL_SNAPSHOTS", "n"+strings.ToLower(c.tok)) == nil {
			c.t.Errorf("no snapshot saved:\n%s", r)
		}
	})
	save.cells = ackCellsFor()
	rows = append(rows, rm, save)

	rows = append(rows,
		mirrorRow("seek --origin", "seek", func(c *cell) []string {
			c.waitMirror()
			return []string{"seek", "M" + c.tok, "--origin", c.S + ":3", "--json"}
		}, func(c *cell, f fault, r result) {
			var d struct {
				Exact  bool   `json:"exact"`
				Reason string `json:"reason"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || d.Exact || !strings.Contains(d.Reason, "came from an earlier stream") {
				c.t.Errorf("seek --origin into copies of the earlier origin: exact %v, reason %q (%v)", d.Exact, d.Reason, err)
			}
		}, skip("came from an earlier stream"), false),
		mirrorRow("consumer copy", "consumer copy", func(c *cell) []string {
			c.waitMirror()
			c.ack(c.S, c.C, 2)
			return []string{"consumer", "copy", c.S, c.C, "--to-stream", "M" + c.tok, "--execute"}
		}, nil, refuse("came from an earlier stream"), false),
	)

	cons := consumeRow()
	cons.cells = map[fault]expect{
		fStream:   skip("proves nothing about this stream's messages"),
		fSame:     holds("processed 5, duplicates skipped 5"),
		fOtherCfg: holds("processed 5, duplicates skipped 5"),
		fEdited:   holds("processed 5"),
		// Message 7's record does not parse: reported, message 7 is not
		// run (nothing proves it was not done) and fails (exit 1), the
		// others run.
		fUnparsable: skipCode(1, "is corrupt"),
		fOtherObj:   skip("with a different payload; skipped as a duplicate"),
		// Message 7's forged dead letter is not published; it is left
		// for acks retry (exit 1: it failed in this run).
		fHostile: skipCode(1, "cannot be published"),
	}
	rows = append(rows, cons)

	ackCells := ackCellsFor
	ackRows := []row{
		ackRow("acks get", "acks get", false, func(c *cell) []string { return []string{"acks", "get", scope(c), "--seq", "3"} }, nil),
		ackRow("acks ls", "acks ls", false, func(c *cell) []string { return []string{"acks", "ls", "--scope", scope(c)} }, nil),
		ackRow("acks stats", "acks stats", false, func(c *cell) []string { return []string{"acks", "stats", "--scope", scope(c)} }, nil),
		ackRowOf("acks retry", "acks retry", true, true, func(c *cell) []string {
			return []string{"acks", "retry", "--scope", scope(c), "--all-failed", "--exec", c.handlerLog(), "--execute"}
		}, func(c *cell, f fault, r result) {
			// Message 3 runs again only where its failed record is of
			// this stream's message 3.
			want := map[fault]string{fSame: "3", fOtherCfg: "3", fHostile: "3"}[f]
			if got := strings.Join(c.ran(), ","); got != want {
				c.t.Errorf("acks retry ran %q, want %q:\n%s", got, want, r)
			}
		}),
		ackRow("acks forget", "acks forget", true, func(c *cell) []string {
			return []string{"acks", "forget", "--scope", scope(c), "--from-seq", "2", "--to-seq", "3", "--execute"}
		}, nil),
		ackRow("acks compact", "acks compact", true, func(c *cell) []string {
			return []string{"acks", "compact", "--scope", scope(c)}
		}, nil),
		ackRowOf("consumer check --failed-records-warn", "consumer check", true, false, func(c *cell) []string {
			return []string{"consumer", "check", c.S, c.C, "--failed-records-warn", "0"}
		}, nil),
	}
	for i := range ackRows {
		ackRows[i].cells = ackCells()
	}
	// acks get: the one record asked for cannot be used: reported, and
	// not found (exit 3).
	ackRows[0].cells[fUnparsable] = skipCode(3, `ack record "{key}"`)
	ackRows[0].cells[fOtherObj] = skipCode(3, `ack record "{key}"`)
	ackRows[0].cells[fHostile] = skipCode(3, `ack record "{key}"`)
	// acks stats: the floor forged past the stream's end too, which the
	// text says (as --json counts it).
	ackRows[2].hostile = func(c *cell) {
		c.editRecord(func(m map[string]any) { hostileAck(c, m) })
		key := "f." + c.S + "." + c.C + ".c" + c.S + "/" + c.C
		c.kvPut(acksBucket, key, c.editJSON(c.kvGet(acksBucket, key), func(m map[string]any) {
			for _, r := range m["rg"].([]any) {
				r.(map[string]any)["e"] = 1000000
			}
		}))
	}
	ackRows[2].cells[fHostile] = skip("floor")
	// acks retry: a failed record (plausible numbers) naming a dead
	// letter on the victim: the message runs again and nothing goes to
	// the victim (its dead letter only ever goes to --dead-letter).
	ackRows[3].hostile = func(c *cell) {
		c.editRecord(func(m map[string]any) { hostileDeadLetter(c, m) })
	}
	ackRows[3].cells[fHostile] = skip("")
	// consumer check: a failed record of the consumer's scope is a
	// warning (exit 1), as it says; the stream recreated, the earlier
	// stream's failed record is not this stream's.
	ackRows[6].cells[fSame] = expect{kind: used, code: 1, says: "failed records 1 > 0"}
	ackRows[6].cells[fOtherCfg] = expect{kind: used, code: 1, says: "failed records 1 > 0"}
	rows = append(rows, ackRows...)
	rows = append(rows, auditRow())
	rows = append(rows, pickRows()...)
	return rows
}

func ackCellsFor() map[fault]expect {
	return map[fault]expect{
		fStream: skip("proves nothing"),
		// The stream is the same: a done record of its message stays true
		// whichever consumer delivered it.
		fSame:       holds(""),
		fOtherCfg:   holds(""),
		fEdited:     notApplicable(noEditHere),
		fUnparsable: skip(`ack record "{key}"`),
		// Message 5's record of D's scope under C's key of message 3:
		// it is not message 3's, and is named as such.
		fOtherObj: skip(`"{key}"`),
		// Impossible numbers make a record unreadable.
		fHostile: skip(`ack record "{key}"`),
	}
}

// unpaused is a consumer's state without whether it is paused.
func unpaused(s string) string {
	return pausedPart.ReplaceAllString(s, "")
}

var pausedPart = regexp.MustCompile(`, paused (true|false)`)

// holds: the record is still true of the object and is used as it is
// (a done message of the same stream is not run again).
func holds(says string) expect { return expect{kind: used, says: says} }

var _ = fmt.Sprint
