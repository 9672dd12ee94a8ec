package failover

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// adapted is an origin consumer's configuration made fit for the target.
type adapted struct {
	config json.RawMessage
	// filters are the consumer's filters on the target.
	filters []string
	// dropped says which fields were not copied, and why; notes what was
	// changed.
	dropped []string
	notes   []string
	// unmapped lists filters the link's subject transform cannot map
	// (copied unchanged).
	unmapped []string
}

// adapt makes the configuration an origin consumer had (exactly as the
// server returned it) into the one its copy on the target gets: the same,
// starting by sequence at seq, without a pause (a copy is made to
// deliver), with no more replicas than the target stream has, and with its
// filters mapped through the link's subject transform.
func adapt(raw json.RawMessage, seq uint64, replicas int, v *view) (*adapted, error) {
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("read the origin consumer's configuration: %w", err)
	}
	if cfg == nil {
		cfg = map[string]json.RawMessage{}
	}
	a := &adapted{}
	if p, ok := cfg["pause_until"]; ok {
		var t *time.Time
		if json.Unmarshal(p, &t) == nil && t != nil && !t.IsZero() {
			a.dropped = append(a.dropped, fmt.Sprintf("pause_until (%s): the copy is made to deliver, not paused", t.UTC().Format(time.RFC3339)))
		}
		delete(cfg, "pause_until")
	}
	if r, ok := cfg["num_replicas"]; ok {
		var n int
		if json.Unmarshal(r, &n) == nil && n > replicas && replicas > 0 {
			a.dropped = append(a.dropped, fmt.Sprintf("num_replicas (%d): stream %q has %d, so the copy takes the stream's", n, v.target, replicas))
			cfg["num_replicas"] = json.RawMessage("0")
		}
	}
	var f struct {
		One  string   `json:"filter_subject"`
		Many []string `json:"filter_subjects"`
	}
	_ = json.Unmarshal(raw, &f)
	filters := f.Many
	if f.One != "" {
		filters = []string{f.One}
	}
	var mapped []string
	changed := false
	for _, s := range filters {
		m, ok := v.mapFilter(s)
		if !ok {
			a.unmapped = append(a.unmapped, s)
			m = s
		}
		changed = changed || m != s
		mapped = append(mapped, m)
	}
	if changed {
		a.notes = append(a.notes, fmt.Sprintf("filter %s becomes %s on %q (the subject transform of its %s)", strings.Join(filters, ", "), strings.Join(mapped, ", "), v.target, v.linkWord()))
		if f.One != "" {
			cfg["filter_subject"], _ = json.Marshal(mapped[0])
		} else {
			cfg["filter_subjects"], _ = json.Marshal(mapped)
		}
	}
	a.filters = mapped
	if a.filters == nil {
		a.filters = []string{}
	}
	cfg["deliver_policy"] = json.RawMessage(`"by_start_sequence"`)
	cfg["opt_start_seq"], _ = json.Marshal(seq)
	delete(cfg, "opt_start_time")
	out, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	a.config = out
	return a, nil
}

// linkWord names the target's link to the origin.
func (v *view) linkWord() string {
	if v.mirror {
		return "mirror"
	}
	return "source"
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
