package failover

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

func TestMapFilter(t *testing.T) {
	tr := func(src, dst string) *view {
		return &view{origin: "ORDERS", target: "XF", link: &jetstream.StreamSource{Name: "ORDERS",
			SubjectTransforms: []jetstream.SubjectTransformConfig{{Source: src, Destination: dst}}}}
	}
	for _, c := range []struct {
		v       *view
		in, out string
		ok      bool
	}{
		{&view{link: &jetstream.StreamSource{Name: "ORDERS"}}, "orders.eu", "orders.eu", true},
		{tr("orders.>", "xf.orders.>"), "orders.eu", "xf.orders.eu", true},
		{tr("orders.>", "xf.orders.>"), "orders.*", "xf.orders.*", true},
		{tr("orders.>", "xf.orders.>"), "other.eu", "", false},
		{tr("orders.*", "xf.$1.orders"), "orders.eu", "xf.eu.orders", true},
		{tr("orders.*.*", "{{wildcard(2)}}.{{ wildcard(1) }}"), "orders.eu.paid", "paid.eu", true},
		{tr("orders.*", "xf.{{partition(3,1)}}"), "orders.eu", "", false},
		{tr("", "xf.>"), "orders.eu", "xf.orders.eu", true},
	} {
		got, ok := c.v.mapFilter(c.in)
		if got != c.out || ok != c.ok {
			t.Errorf("mapFilter(%q) through %+v = %q, %v; want %q, %v", c.in, c.v.link.SubjectTransforms, got, ok, c.out, c.ok)
		}
	}
}

func TestCoverage(t *testing.T) {
	eu := &view{origin: "ORDERS", target: "EU", link: &jetstream.StreamSource{Name: "ORDERS", FilterSubject: "orders.eu"}, originSubjects: []string{"orders.>"}}
	for _, c := range []struct {
		filters []string
		want    string
	}{
		{[]string{"orders.eu"}, ""},
		{[]string{"orders.us"}, `its filter orders.us is not covered by the subjects "EU" receives from "ORDERS" (orders.eu): the copy delivers none of those messages`},
		{[]string{"orders.*"}, `its filter orders.* is only partly covered by the subjects "EU" receives from "ORDERS" (orders.eu)`},
		{nil, `it takes all subjects, and "EU" receives only orders.eu of "ORDERS"'s messages`},
	} {
		if got := eu.coverage(c.filters); got != c.want {
			t.Errorf("coverage(%v) = %q, want %q", c.filters, got, c.want)
		}
	}
	mirror := &view{origin: "ORDERS", target: "M", mirror: true, link: &jetstream.StreamSource{Name: "ORDERS"}, originSubjects: []string{"orders.>"}}
	if got := mirror.coverage([]string{"orders.eu"}); got != "" {
		t.Errorf("a mirror of everything covers orders.eu: got %q", got)
	}
	if got := (&view{origin: "ORDERS", target: "X"}).coverage(nil); !strings.Contains(got, "neither mirrors nor sources") {
		t.Errorf("no link: got %q", got)
	}
}

func TestAdapt(t *testing.T) {
	v := &view{origin: "ORDERS", target: "XF", link: &jetstream.StreamSource{Name: "ORDERS",
		SubjectTransforms: []jetstream.SubjectTransformConfig{{Source: "orders.>", Destination: "xf.orders.>"}}}}
	raw := json.RawMessage(`{"durable_name":"billing","name":"billing","deliver_policy":"by_start_time","opt_start_time":"2026-01-01T00:00:00Z","filter_subject":"orders.eu","num_replicas":3,"pause_until":"9999-12-31T23:59:59Z","ack_policy":"explicit","max_deliver":5}`)
	a, err := adapt(raw, 42, 1, v)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(a.config, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"durable_name": "billing", "name": "billing", "deliver_policy": "by_start_sequence", "opt_start_seq": 42.0,
		"filter_subject": "xf.orders.eu", "num_replicas": 0.0, "ack_policy": "explicit", "max_deliver": 5.0}
	if len(got) != len(want) {
		t.Errorf("adapted configuration %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("adapted %s = %v, want %v", k, got[k], w)
		}
	}
	if len(a.dropped) != 2 || !strings.HasPrefix(a.dropped[0], "pause_until") || !strings.HasPrefix(a.dropped[1], "num_replicas (3)") {
		t.Errorf("dropped %q, want pause_until and num_replicas", a.dropped)
	}
	if len(a.notes) != 1 || !strings.Contains(a.notes[0], "filter orders.eu becomes xf.orders.eu") {
		t.Errorf("notes %q", a.notes)
	}
}
