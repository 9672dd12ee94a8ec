package reset

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil"
)

// Source is the consumer whose position a ToConsumer target copies, as it
// was when the change was planned.
type Source struct {
	Consumer  string   `json:"consumer"`
	Position  string   `json:"position"`
	Delivered uint64   `json:"delivered"`
	AckFloor  uint64   `json:"ack_floor"`
	Filters   []string `json:"filter_subjects"`
	// Created is when the server created the source consumer: a plan
	// applied later (--from-file) refuses a source created again since.
	Created *time.Time `json:"created,omitempty"`
	// Uncovered counts the messages the move skips that this consumer's
	// filter takes and the source's does not: the source's position says
	// nothing about them, so neither consumer has handled them.
	Uncovered uint64 `json:"uncovered"`
	// UncoveredUnknown is set when the move skips messages whose count is
	// unknown (a refused or unanswered read): Uncovered is then not known.
	UncoveredUnknown bool `json:"uncovered_unknown,omitempty"`
}

// source reads the consumer a ToConsumer target copies, once per plan.
func (p *planner) source(ctx context.Context, name string) (*consumerState, error) {
	p.srcOnce.Do(func() {
		stream := p.info.Config.Name
		p.src, p.srcErr = loadConsumer(ctx, p.js, stream, name)
		if p.srcErr != nil {
			p.srcErr = jsutil.Wrap(p.srcErr, "copy the position of consumer %q on %q", name, stream)
		}
	})
	return p.src, p.srcErr
}

// resolveSource is the target sequence a ToConsumer target gives c, and
// fills in c.Source.
func (p *planner) resolveSource(ctx context.Context, c *Change, target Target) (uint64, error) {
	src, err := p.source(ctx, target.Consumer)
	if err != nil {
		return 0, err
	}
	info := src.info
	c.Source = &Source{
		Consumer: target.Consumer, Position: target.position(),
		Delivered: info.Delivered.Stream, AckFloor: info.AckFloor.Stream, Filters: filters(info.Config),
		Created: src.createdAt(),
	}
	if target.position() == PositionDelivered {
		return c.Source.Delivered + 1, nil
	}
	return c.Source.AckFloor + 1, nil
}

// compareSource warns when c's filter differs from its source's, and counts
// the messages that moving c forward skips which only c's filter takes
// (Source.Uncovered; checkRefusals refuses the move when there are any).
// It runs after count, which has counted every skipped message in Skip.
func (p *planner) compareSource(ctx context.Context, c *Change) error {
	s := c.Source
	if sameFilters(c.Filters, s.Filters) {
		return nil
	}
	c.warn("its filter (%s) differs from %s's (%s): %s's position says nothing about the messages only this consumer takes",
		filterText(c.Filters), s.Consumer, filterText(s.Filters), s.Consumer)
	if c.Skip == nil {
		s.UncoveredUnknown = true
		return nil
	}
	if *c.Skip == 0 {
		return nil
	}
	common, any := intersectFilters(c.Filters, s.Filters)
	covered := uint64(0)
	if any {
		a, err := p.countFiltered(ctx, c, common, c.From.AckFloor+1)
		if err != nil {
			return err
		}
		b, err := p.countFiltered(ctx, c, common, c.To.Sequence)
		if err != nil {
			return err
		}
		if a == nil || b == nil {
			s.UncoveredUnknown = true
			return nil
		}
		if *a > *b {
			covered = *a - *b
		}
	}
	if *c.Skip > covered {
		s.Uncovered = *c.Skip - covered
	}
	return nil
}

// sameFilters reports whether two consumers take the same subjects by
// the same filters (in any order).
func sameFilters(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

func filterText(f []string) string {
	if len(f) == 0 {
		return "all subjects"
	}
	return strings.Join(f, ", ")
}

// intersectFilters returns filters that take exactly the subjects both a
// and b take (no filters: all subjects); any is false when no subject is
// taken by both. The result's filters do not overlap when a's do not and
// b's do not (as the server requires of a consumer's filters).
func intersectFilters(a, b []string) (out []string, any bool) {
	switch {
	case len(a) == 0:
		return b, true
	case len(b) == 0:
		return a, true
	}
	for _, x := range a {
		for _, y := range b {
			if f, ok := intersectSubjects(x, y); ok && !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out, len(out) > 0
}

// intersectSubjects returns the subject filter that matches exactly the
// subjects both filters a and b match ('*' one token, '>' one or more at
// the end); ok is false when no subject matches both.
func intersectSubjects(a, b string) (string, bool) {
	at, bt := strings.Split(a, "."), strings.Split(b, ".")
	var out []string
	for i := 0; ; i++ {
		switch {
		case i < len(at) && at[i] == ">": // one or more of b's tokens
			if i == len(bt) {
				return "", false
			}
			return strings.Join(append(out, bt[i:]...), "."), true
		case i < len(bt) && bt[i] == ">":
			if i == len(at) {
				return "", false
			}
			return strings.Join(append(out, at[i:]...), "."), true
		case i == len(at) && i == len(bt):
			return strings.Join(out, "."), true
		case i == len(at) || i == len(bt):
			return "", false
		case at[i] == "*":
			out = append(out, bt[i])
		case bt[i] == "*" || at[i] == bt[i]:
			out = append(out, at[i])
		default:
			return "", false
		}
	}
}
