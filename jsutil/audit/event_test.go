package audit

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSubjectEscapesNames: every name is one token, reversibly escaped, so
// no stream or consumer name can add, remove or wildcard a token.
func TestSubjectEscapesNames(t *testing.T) {
	for _, c := range []struct {
		action           Action
		stream, consumer string
		want             string
	}{
		{Reset, "ORDERS", "billing", "jsctl.audit.reset.ORDERS.billing"},
		{SnapshotSave, "ORDERS", "billing.v2", "jsctl.audit.snapshot.save.ORDERS.billing=2Ev2"},
		{Pause, "a b", "*", "jsctl.audit.pause.a=20b.=2A"},
		{AcksForget, "team", "", "jsctl.audit.acks.forget.team.="},
		{Copy, "ORD>", "c\n", "jsctl.audit.copy.ORD=3E.c=0A"},
	} {
		got := Subject(c.action, c.stream, c.consumer)
		if got != c.want {
			t.Errorf("Subject(%q, %q, %q) = %q, want %q", c.action, c.stream, c.consumer, got, c.want)
		}
		if n := strings.Count(got, ".") + 1; n != 4+strings.Count(string(c.action), ".")+1 {
			t.Errorf("%q has %d tokens", got, n)
		}
	}
}

// TestFiltersDoNotOverlap: the filters of one query are disjoint (the
// server refuses overlapping filter subjects) and each action's matches
// only its own subjects.
func TestFiltersDoNotOverlap(t *testing.T) {
	fs := Filters("ORDERS", "", nil)
	if len(fs) != len(Actions()) {
		t.Fatalf("%d filters for %d actions", len(fs), len(Actions()))
	}
	seen := map[string]bool{}
	for _, f := range fs {
		if seen[f] {
			t.Errorf("filter %q twice", f)
		}
		seen[f] = true
	}
	if got := Filters("", "", nil); len(got) != 1 || got[0] != "jsctl.audit.>" {
		t.Errorf("no selection: %q", got)
	}
}

// TestConfigHash: the hash ignores key order, pause_until and the server's
// metadata, and changes with any other field.
func TestConfigHash(t *testing.T) {
	a := ConfigHash(json.RawMessage(`{"durable_name":"c","ack_policy":"explicit","pause_until":"2026-01-01T00:00:00Z","metadata":{"_nats.ver":"2.12"}}`))
	b := ConfigHash(json.RawMessage(`{"ack_policy":"explicit","durable_name":"c"}`))
	c := ConfigHash(json.RawMessage(`{"ack_policy":"none","durable_name":"c"}`))
	if a == "" || a != b || a == c || !strings.HasPrefix(a, "sha256:") || len(a) != len("sha256:")+16 {
		t.Errorf("hashes %q %q %q", a, b, c)
	}
	if ConfigHash(nil) != "" || ConfigHash(json.RawMessage(`[`)) != "" {
		t.Error("no configuration has a hash")
	}
}

// TestDecodeRefuses: what anyone could publish on jsctl.audit.> and is not
// a v1 event of a known action is refused.
func TestDecodeRefuses(t *testing.T) {
	for _, data := range []string{
		`not json`,
		`{"v":2,"id":"x","action":"reset","stream":{"name":"S"}}`,
		`{"v":1,"id":"x","action":"drop","stream":{"name":"S"}}`,
		`{"v":1,"action":"reset","stream":{"name":"S"}}`,
		`{"v":1,"id":"x","action":"reset","stream":{"name":""}}`,
	} {
		if _, err := Decode([]byte(data)); err == nil {
			t.Errorf("Decode(%s) accepted it", data)
		}
	}
	if _, err := Decode([]byte(`{"v":1,"id":"x","action":"snapshot.rm","stream":{"name":"S"}}`)); err != nil {
		t.Errorf("a good event: %v", err)
	}
}
