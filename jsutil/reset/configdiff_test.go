package reset

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestDiffConfig: names, the server's metadata, key order and spacing are
// not differences; absent fields are null; the fields that redirect or
// stop acknowledging messages carry a warning, others do not.
func TestDiffConfig(t *testing.T) {
	from := json.RawMessage(`{"name":"a","durable_name":"a","ack_policy":"explicit","max_deliver":-1,"metadata":{"_nats.ver":"2.15.2"},"filter_subject":"orders.eu","ack_wait":30000000000}`)
	to := json.RawMessage(`{ "ack_wait":45000000000, "name":"b","filter_subjects":["orders.>"], "max_deliver":5,"ack_policy":"explicit","metadata":{"_nats.ver":"2.11.0","team":"pay"}}`)
	got, err := DiffConfig(from, to)
	if err != nil {
		t.Fatal(err)
	}
	want := []ConfigField{
		{Field: "ack_wait", From: json.RawMessage(`30000000000`), To: json.RawMessage(`45000000000`)},
		{Field: "filter_subject", From: json.RawMessage(`"orders.eu"`), To: json.RawMessage(`null`), Warning: `filter_subject: "orders.eu" -> unset: changes which messages the consumer delivers`},
		{Field: "filter_subjects", From: json.RawMessage(`null`), To: json.RawMessage(`["orders.>"]`), Warning: `filter_subjects: unset -> ["orders.>"]: changes which messages the consumer delivers`},
		{Field: "max_deliver", From: json.RawMessage(`-1`), To: json.RawMessage(`5`), Warning: `max_deliver: -1 -> 5: changes how often a message is delivered before it is given up`},
		{Field: "metadata", From: json.RawMessage(`null`), To: json.RawMessage(`{"team":"pay"}`)},
	}
	if !reflect.DeepEqual(got, want) {
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(want)
		t.Fatalf("diff\n%s\nwant\n%s", a, b)
	}
	if same, err := DiffConfig(DefaultConfig, json.RawMessage(`{"replay_policy":"instant","num_replicas":0,"max_waiting":512,"max_deliver":-1,"max_ack_pending":1000,"deliver_policy":"all","ack_wait":30000000000,"ack_policy":"explicit","durable_name":"x"}`)); err != nil || len(same) != 0 {
		t.Fatalf("a default consumer differs from the defaults: %+v, %v", same, err)
	}
}

// TestDiffConfigUnsetValues: a field set to a value that means "not set"
// (null, the zero time) is the same as an absent one, on either side, in
// every configuration diff (DiffConfig is the only one: plans, copies,
// snapshots, recover and history all use it); a real value still differs.
func TestDiffConfigUnsetValues(t *testing.T) {
	for _, c := range []struct {
		name     string
		from, to string
		want     []string
	}{
		{"zero pause_until against none", `{"pause_until":"0001-01-01T00:00:00Z","deliver_policy":"all"}`, `{"deliver_policy":"all"}`, nil},
		{"none against zero opt_start_time", `{}`, `{"opt_start_time":"0001-01-01T00:00:00Z"}`, nil},
		{"null against none", `{"description":null}`, `{}`, nil},
		{"zero against a time", `{"pause_until":"0001-01-01T00:00:00Z"}`, `{"pause_until":"2026-11-29T10:00:00Z"}`, []string{"pause_until"}},
		{"a time against none", `{"pause_until":"2026-11-29T10:00:00Z"}`, `{}`, []string{"pause_until"}},
		{"a string that is no time", `{"description":"0001"}`, `{}`, []string{"description"}},
	} {
		diff, err := DiffConfig(json.RawMessage(c.from), json.RawMessage(c.to))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []string
		for _, f := range diff {
			got = append(got, f.Field)
			if string(f.From) == `"0001-01-01T00:00:00Z"` || string(f.To) == `"0001-01-01T00:00:00Z"` {
				t.Errorf("%s: the zero time shown as a value: %+v", c.name, f)
			}
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s: diff fields %q, want %q", c.name, got, c.want)
		}
	}
}
