package failover

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/jsctl/jsctl/jsutil/replica"
	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/nats-io/nats.go/jetstream"
)

// view is what the target stream takes from the origin: the mirror or
// source entry naming the origin (nil when it names none) and the origin's
// own subjects.
type view struct {
	origin, target string
	// link is the target's mirror, or its source of the origin.
	link   *jetstream.StreamSource
	mirror bool
	// originSubjects are the origin's subjects (nil when unknown);
	// originLast its last sequence, when originKnown.
	originSubjects []string
	originLast     uint64
	originKnown    bool
}

// newView finds how target replicates origin from the target's
// configuration.
func newView(origin string, oinfo *jetstream.StreamInfo, target *jetstream.StreamInfo) *view {
	v := &view{origin: origin, target: target.Config.Name}
	if oinfo != nil {
		v.originSubjects, v.originLast, v.originKnown = oinfo.Config.Subjects, oinfo.State.LastSeq, true
	}
	if m := target.Config.Mirror; m != nil && m.Name == origin {
		v.link, v.mirror = m, true
		return v
	}
	for _, s := range target.Config.Sources {
		if s != nil && s.Name == origin {
			v.link = s
			return v
		}
	}
	return v
}

// method is how the target's link translates positions.
func (v *view) method() string {
	switch {
	case v.link == nil:
		return string(replica.ByTime)
	case v.mirror:
		return string(replica.Mirror)
	}
	return string(replica.Source)
}

// takes lists the subjects, as the target holds them, of the origin's
// messages the target receives (nil: all of the origin's, unknown).
func (v *view) takes() []string {
	if v.link == nil {
		return nil
	}
	if len(v.link.SubjectTransforms) > 0 {
		var out []string
		for _, tr := range v.link.SubjectTransforms {
			src := tr.Source
			if src == "" {
				src = ">"
			}
			dst := tr.Destination
			if dst == "" {
				dst = src
			}
			if p, ok := destinationPattern(src, dst); ok {
				out = append(out, p)
			}
		}
		return out
	}
	if v.link.FilterSubject != "" {
		return []string{v.link.FilterSubject}
	}
	return v.originSubjects
}

// mapFilter is the subject filter on the target that takes what filter f
// takes on the origin: f itself, or f through the link's subject
// transform. ok is false when f cannot be mapped (a transform with
// functions other than wildcard references, or none that takes f).
func (v *view) mapFilter(f string) (string, bool) {
	if v.link == nil || len(v.link.SubjectTransforms) == 0 {
		return f, true
	}
	for _, tr := range v.link.SubjectTransforms {
		src := tr.Source
		if src == "" {
			src = ">"
		}
		if !within(f, src) {
			continue
		}
		dst := tr.Destination
		if dst == "" {
			return f, true
		}
		return transform(f, src, dst)
	}
	return "", false
}

// within reports whether every subject filter a takes, b takes too.
func within(a, b string) bool {
	x, ok := reset.IntersectSubjects(a, b)
	return ok && x == a
}

// wildcardRef matches a destination token that refers to a source
// wildcard: $N or {{wildcard(N)}} (any spacing, any case).
var wildcardRef = regexp.MustCompile(`^(?:\$(\d+)|\{\{\s*(?i:wildcard)\s*\(\s*(\d+)\s*\)\s*\}\})$`)

// transform maps filter f (within src) through the transform src → dst:
// the tokens f has where src has wildcards fill dst's wildcards, in order
// ('*' and '>') or by number ($N, {{wildcard(N)}}).
func transform(f, src, dst string) (string, bool) {
	ft, st := strings.Split(f, "."), strings.Split(src, ".")
	var caps []string
	for i, tok := range st {
		switch tok {
		case "*":
			caps = append(caps, ft[i])
		case ">":
			caps = append(caps, strings.Join(ft[i:], "."))
		}
	}
	next := 0
	var out []string
	for _, tok := range strings.Split(dst, ".") {
		switch m := wildcardRef.FindStringSubmatch(tok); {
		case tok == "*" || tok == ">":
			if next >= len(caps) {
				return "", false
			}
			out = append(out, caps[next])
			next++
		case m != nil:
			n, _ := strconv.Atoi(m[1] + m[2])
			if n < 1 || n > len(caps) {
				return "", false
			}
			out = append(out, caps[n-1])
		case strings.Contains(tok, "{{"):
			return "", false // partition, split, ...: not mapped
		default:
			out = append(out, tok)
		}
	}
	return strings.Join(out, "."), true
}

// destinationPattern is the filter that takes every subject the transform
// src → dst produces: dst with src's wildcards in place of its references.
func destinationPattern(src, dst string) (string, bool) { return transform(src, src, dst) }

// coverage says how much of what filters take (on the target) the target
// receives from the origin: "" when all of it, else a warning.
func (v *view) coverage(filters []string) string {
	takes := v.takes()
	if v.link == nil {
		return fmt.Sprintf("stream %q neither mirrors nor sources %q by that name: the position is translated by time, and its filters are not checked", v.target, v.origin)
	}
	if takes == nil {
		return ""
	}
	if len(filters) == 0 {
		if v.link.FilterSubject == "" && len(v.link.SubjectTransforms) == 0 {
			return ""
		}
		return fmt.Sprintf("it takes all subjects, and %q receives only %s of %q's messages", v.target, strings.Join(takes, ", "), v.origin)
	}
	var none, part []string
	for _, f := range filters {
		switch {
		case slices.ContainsFunc(takes, func(t string) bool { return within(f, t) }):
		case slices.ContainsFunc(takes, func(t string) bool { _, ok := reset.IntersectSubjects(f, t); return ok }):
			part = append(part, f)
		default:
			none = append(none, f)
		}
	}
	var out []string
	if len(none) > 0 {
		out = append(out, fmt.Sprintf("its filter %s is not covered by the subjects %q receives from %q (%s): the copy delivers none of those messages", strings.Join(none, ", "), v.target, v.origin, strings.Join(takes, ", ")))
	}
	if len(part) > 0 {
		out = append(out, fmt.Sprintf("its filter %s is only partly covered by the subjects %q receives from %q (%s)", strings.Join(part, ", "), v.target, v.origin, strings.Join(takes, ", ")))
	}
	return strings.Join(out, "; ")
}
