package trustmatrix

import (
	"strings"

	"github.com/nats-io/nats.go"
)

// auditRow: jsctl audit lists the events changing commands stored in the
// stream JSCTL_AUDIT (anyone allowed to publish on jsctl.audit.> can add
// a message there).
func auditRow() row {
	subject := func(c *cell, consumer string) string { return "jsctl.audit.reset." + c.S + "." + consumer }
	event := func(c *cell, consumer string) []byte {
		c.t.Helper()
		s, err := c.js.Stream(c.ctx(), "JSCTL_AUDIT")
		if err != nil {
			c.t.Fatal(err)
		}
		m, err := s.GetLastMsgForSubject(c.ctx(), subject(c, consumer))
		if err != nil {
			c.t.Fatalf("the audit event of %s: %v", consumer, err)
		}
		return m.Data
	}
	put := func(c *cell, data []byte) {
		c.t.Helper()
		if _, err := c.js.PublishMsg(c.ctx(), &nats.Msg{Subject: subject(c, c.C), Data: data}); err != nil {
			c.t.Fatal(err)
		}
	}
	past := "an audit event says what was done then; a later fault changes nothing in it"
	return row{
		name: "audit", command: "audit",
		record: func(c *cell) {
			c.base()
			c.must("consumer", "reset", c.S, c.C, "--to-seq", "2", "--execute")
			c.must("consumer", "reset", c.S, c.D, "--to-seq", "2", "--execute")
		},
		use:    func(c *cell) []string { return []string{"audit", c.S, c.C} },
		garble: func(c *cell) { put(c, []byte("garbage{{")) },
		other: func(c *cell) {
			// D's event, on C's subject.
			put(c, event(c, c.D))
		},
		hostile: func(c *cell) {
			put(c, c.editJSON(event(c, c.C), func(m map[string]any) { hostileWalk(c, m) }))
		},
		check: func(c *cell, f fault, r result) {
			// The forged event is listed at the time the server stored
			// it, marked, never at the time it claims.
			if f == fHostile && (!strings.Contains(r.stdout, "(!)") || strings.Contains(r.stdout, "12-31 23:59:59") || !strings.Contains(r.stderr, "9999-12-31T23:59:59Z is after the server stored the event")) {
				c.t.Errorf("the forged event is not marked, or is shown at its own time:\n%s", r)
			}
		},
		cells: map[fault]expect{
			fStream:     holds("reset"),
			fSame:       holds("reset"),
			fOtherCfg:   holds("reset"),
			fEdited:     notApplicable(past),
			fUnparsable: skip(""),
			fOtherObj:   skip(""),
			fHostile:    skip(""),
		},
	}
}
