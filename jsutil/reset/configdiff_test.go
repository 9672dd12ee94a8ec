package reset

import (
	"encoding/json"
	"reflect"
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
