package reset

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/jsctl/jsctl/jsutil"
)

// PlanSet shows the plans of several streams as one document (consumer
// reset --streams, consumer snapshot restore): the changes of every plan
// in one list, each naming its stream. ReadPlans splits it again.
type PlanSet struct {
	Created  time.Time `json:"created"`
	Streams  []string  `json:"streams"`
	Target   Target    `json:"target"`
	Executed bool      `json:"executed"`
	Changes  []*Change `json:"changes"`
	// Skipped lists the ephemeral consumers --all left alone, as
	// STREAM/CONSUMER.
	Skipped    []string     `json:"skipped,omitempty"`
	Unfinished []Unfinished `json:"unfinished_changes,omitempty"`

	// StreamCreated is each stream's Plan.StreamCreated, by name.
	StreamCreated map[string]time.Time `json:"stream_created,omitempty"`
}

// Combine makes the document of several plans (of one target); Executed is
// set when any of them was executed.
func Combine(target Target, plans []*Plan) *PlanSet {
	s := &PlanSet{Created: time.Now().UTC(), Streams: []string{}, Target: target, Changes: []*Change{}}
	for i, p := range plans {
		if i == 0 {
			s.Created = p.Created
		}
		s.Streams = append(s.Streams, p.Stream)
		s.Executed = s.Executed || p.Executed
		s.Changes = append(s.Changes, p.Changes...)
		for _, n := range p.Skipped {
			s.Skipped = append(s.Skipped, p.Stream+"/"+n)
		}
		s.Unfinished = append(s.Unfinished, p.Unfinished...)
		if p.StreamCreated != nil {
			if s.StreamCreated == nil {
				s.StreamCreated = map[string]time.Time{}
			}
			s.StreamCreated[p.Stream] = *p.StreamCreated
		}
	}
	return s
}

// ReadPlans decodes a plan (see Plan) or a plan set (see PlanSet) written
// as JSON into one plan per stream, in the document's order.
func ReadPlans(data []byte) ([]*Plan, error) {
	var head struct {
		Streams []string `json:"streams"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "read plan: %w", err)
	}
	if head.Streams == nil {
		p, err := ReadPlan(data)
		if err != nil {
			return nil, err
		}
		return []*Plan{p}, nil
	}
	var s PlanSet
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "read plan: %w", err)
	}
	var out []*Plan
	byStream := map[string]*Plan{}
	for _, name := range s.Streams {
		if name == "" || byStream[name] != nil {
			return nil, jsutil.Errorf(jsutil.ErrBadInput, "read plan: stream %q is listed twice or has no name", name)
		}
		p := &Plan{Created: s.Created, Stream: name, Target: s.Target, Changes: []*Change{}}
		if t, ok := s.StreamCreated[name]; ok {
			p.StreamCreated = &t
		}
		byStream[name] = p
		out = append(out, p)
	}
	for i, c := range s.Changes {
		if c == nil {
			return nil, jsutil.Errorf(jsutil.ErrBadInput, "read plan: change %d is empty", i+1)
		}
		p := byStream[c.Stream]
		if p == nil {
			return nil, jsutil.Errorf(jsutil.ErrBadInput, "read plan: change %d is for stream %q, which the plan does not list", i+1, c.Stream)
		}
		p.Changes = append(p.Changes, c)
	}
	for _, p := range out {
		b, err := json.Marshal(p)
		if err == nil {
			_, err = ReadPlan(b)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// PlansErr returns the refusal of the first refused change of several
// plans (wrapping jsutil.ErrConflict), saying how many more consumers were
// refused, or nil when every change may be made. A change refused in its
// text alone (a plan read from a file) gets its refusal error here.
func PlansErr(plans []*Plan) error {
	var first error
	n := 0
	for _, p := range plans {
		for _, c := range p.Changes {
			if c.refusal == nil && c.Refused != "" {
				c.refusal = jsutil.Errorf(jsutil.ErrConflict, "reset consumer %q on %q: %s", c.Consumer, c.Stream, c.Refused)
			}
			if c.refusal != nil {
				if first == nil {
					first = c.refusal
				}
				n++
			}
		}
	}
	if n > 1 {
		return fmt.Errorf("%w (and %d more consumers refused)", first, n-1)
	}
	return first
}
