package reset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ConfigField is one field of a consumer configuration that a saved
// configuration (a snapshot's, a history record's) sets otherwise: From is
// the value of the consumer it replaces, or the server's default for one it
// creates, To the saved value, both as JSON (null when absent). Warning is
// set for the fields that change where messages go or whether they are
// acknowledged (see CalledOut).
type ConfigField struct {
	Field   string          `json:"field"`
	From    json.RawMessage `json:"from"`
	To      json.RawMessage `json:"to"`
	Warning string          `json:"warning,omitempty"`
}

// calledOut are the fields whose change redirects or drops messages, and
// what a change of each does.
var calledOut = map[string]string{
	"deliver_subject": "changes where messages go (a push subject)",
	"deliver_group":   "changes which clients receive the pushed messages",
	"ack_policy":      "changes whether messages are acknowledged",
	"filter_subject":  "changes which messages the consumer delivers",
	"filter_subjects": "changes which messages the consumer delivers",
	"max_deliver":     "changes how often a message is delivered before it is given up",
}

// DefaultConfig is the configuration nats-server (2.10 to 2.15) returns for
// a durable pull consumer created with nothing but its name and explicit
// acknowledgement, the usual consumer: the base a created consumer's saved
// configuration is shown against.
var DefaultConfig = json.RawMessage(`{"ack_policy":"explicit","ack_wait":30000000000,"deliver_policy":"all","max_ack_pending":1000,"max_deliver":-1,"max_waiting":512,"num_replicas":0,"replay_policy":"instant"}`)

// DiffConfig lists every field in which the saved configuration to
// differs from from (a consumer's configuration, or DefaultConfig), in
// field order, with the called-out fields warned about. Names
// (name, durable_name) and the server's own metadata ("_nats." keys) are
// left out; values are compared as JSON.
func DiffConfig(from, to json.RawMessage) ([]ConfigField, error) {
	a, err := diffFields(from)
	if err != nil {
		return nil, fmt.Errorf("current configuration: %w", err)
	}
	b, err := diffFields(to)
	if err != nil {
		return nil, fmt.Errorf("saved configuration: %w", err)
	}
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	out := []ConfigField{}
	for _, k := range keys {
		if bytes.Equal(a[k], b[k]) {
			continue
		}
		f := ConfigField{Field: k, From: nullOr(a[k]), To: nullOr(b[k])}
		if what := calledOut[k]; what != "" {
			f.Warning = fmt.Sprintf("%s: %s -> %s: %s", k, valueText(f.From), valueText(f.To), what)
		}
		out = append(out, f)
	}
	return out, nil
}

// diffFields splits a configuration into its fields in canonical JSON,
// without names and server metadata.
func diffFields(raw json.RawMessage) (map[string][]byte, error) {
	m := map[string]any{}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
	}
	delete(m, "name")
	delete(m, "durable_name")
	for k, v := range m {
		if unsetValue(v) {
			delete(m, k)
		}
	}
	if md, ok := m["metadata"].(map[string]any); ok {
		for k := range md {
			if strings.HasPrefix(k, "_nats.") {
				delete(md, k)
			}
		}
		if len(md) == 0 {
			delete(m, "metadata")
		}
	}
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		// As written, for people: "orders.>", not "orders.\u003e".
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return nil, err
		}
		out[k] = bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	}
	return out, nil
}

// unsetValue reports whether a configuration value says "not set": JSON
// null, or the zero time ("0001-01-01T00:00:00Z", which clients write for
// a pause_until or opt_start_time they do not set). Such a field is the
// same as an absent one, so a diff never shows "zero time -> unset".
func unsetValue(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		t, err := time.Parse(time.RFC3339Nano, v)
		return err == nil && t.IsZero()
	}
	return false
}

// valueText is a value in a warning: its JSON, or "unset".
func valueText(v json.RawMessage) string {
	if string(v) == "null" {
		return "unset"
	}
	return string(v)
}

func nullOr(b []byte) json.RawMessage {
	if b == nil {
		return json.RawMessage("null")
	}
	return b
}

// noteConfigDiff sets the change's ConfigDiff: the saved configuration
// against the consumer's own (created false: only informative, the
// consumer keeps its configuration) or against the server's defaults
// (created: the consumer is made from it, and each called-out field is a
// warning).
func (c *Change) noteConfigDiff(from, saved json.RawMessage, created bool) {
	diff, err := DiffConfig(from, saved)
	if err != nil {
		c.warn("could not compare the saved configuration: %v", err)
		return
	}
	c.ConfigDiff = diff
	if !created {
		return
	}
	c.Warnings = append(c.Warnings, CalledOut("saved configuration against the server's defaults", diff)...)
}

// CalledOut is a warning for each field of diff that changes where
// messages go or whether they are acknowledged, each starting with what
// the difference is against ("saved configuration against the server's
// defaults").
func CalledOut(what string, diff []ConfigField) []string {
	var out []string
	for _, f := range diff {
		if f.Warning != "" {
			out = append(out, what+": "+f.Warning)
		}
	}
	return out
}
