package picker

import (
	"context"
	"slices"
	"time"

	"github.com/jsctl/jsctl/jsutil/seek"
)

// A consumer may filter on several subjects, and jsutil/seek answers for
// one filter at a time (as the server's message get does). The answers
// within a set of subjects are put together here from one answer per
// subject, with seek's own rules: after is the first message at or after
// the time among them all, before the last one at or before it, nearest
// the closer of the two (a tie goes to the later one); neighbours are the
// nearest of all the subjects' neighbours.

// one answers for a single filter subject ("" = all).
type one interface {
	seek(ctx context.Context, t time.Time, mode seek.Mode, subject string, around int) (*seek.Result, error)
	at(ctx context.Context, seq uint64, subject string, around int) (*seek.Result, error)
}

func firstOf(subjects []string) string {
	if len(subjects) == 0 {
		return ""
	}
	return subjects[0]
}

// seekAny is seek.Seek within any of subjects.
func seekAny(ctx context.Context, o one, t time.Time, mode seek.Mode, subjects []string, around int) (*seek.Result, error) {
	if len(subjects) <= 1 {
		return o.seek(ctx, t, mode, firstOf(subjects), around)
	}
	res := &seek.Result{Target: t, Mode: mode}
	// union asks each subject in mode m and keeps the earliest (after)
	// or the latest (before) message found.
	union := func(m seek.Mode) (*seek.Message, error) {
		var pick *seek.Message
		for _, s := range subjects {
			r, err := o.seek(ctx, t, m, s, 0)
			if err != nil {
				return nil, err
			}
			res.Stream, res.Used = r.Stream, r.Used
			res.FirstSeq, res.LastSeq = max(res.FirstSeq, r.FirstSeq), max(res.LastSeq, r.LastSeq)
			if n := r.Message; n != nil && (pick == nil || m == seek.After && n.Sequence < pick.Sequence || m == seek.Before && n.Sequence > pick.Sequence) {
				pick = n
			}
		}
		return pick, nil
	}
	var chosen *seek.Message
	var err error
	switch mode {
	case seek.Before:
		chosen, err = union(seek.Before)
	case seek.Nearest:
		var later, earlier *seek.Message
		if later, err = union(seek.After); err != nil {
			return nil, err
		}
		if later != nil && later.Time.Equal(t) {
			chosen = later
			break
		}
		if earlier, err = union(seek.Before); err != nil {
			return nil, err
		}
		switch {
		case earlier == nil:
			chosen = later
		case later == nil:
			chosen = earlier
		case later.Time.Sub(t) <= t.Sub(earlier.Time):
			chosen = later
		default:
			chosen = earlier
		}
	default:
		chosen, err = union(seek.After)
	}
	if err != nil {
		return nil, err
	}
	res.Message = chosen
	switch {
	case chosen != nil:
		res.Sequence = chosen.Sequence
	case mode == seek.Before:
		res.Sequence = max(res.FirstSeq, 1)
	default:
		res.Sequence = res.LastSeq + 1
	}
	if around > 0 || chosen != nil {
		_, before, after, err := atAnyParts(ctx, o, res.Sequence, subjects, around)
		if err != nil {
			return nil, err
		}
		// The chosen message is the first at or after its own sequence;
		// with none chosen seek lists around messages from Sequence on.
		keep := around
		if chosen != nil {
			keep++
		}
		res.Neighbours = append(before, after[:min(keep, len(after))]...)
	}
	return res, nil
}

// atAny is seek.At within any of subjects.
func atAny(ctx context.Context, o one, seq uint64, subjects []string, around int) (*seek.Result, error) {
	if len(subjects) <= 1 {
		return o.at(ctx, seq, firstOf(subjects), around)
	}
	res, before, after, err := atAnyParts(ctx, o, seq, subjects, around)
	if err != nil {
		return nil, err
	}
	keep := around
	if res.Message != nil {
		keep++ // the chosen message and around after it
	}
	res.Neighbours = append(before, after[:min(keep, len(after))]...)
	return res, nil
}

// atAnyParts asks each subject for the first message at or after seq
// with around neighbours and returns the earliest of them (res.Message,
// res.Sequence as seek.At sets it), the nearest around messages before
// seq and the first around+1 from seq on: each subject gave its own
// nearest ones, so the nearest of them all are among them.
func atAnyParts(ctx context.Context, o one, seq uint64, subjects []string, around int) (res *seek.Result, before, after []seek.Message, err error) {
	seq = max(seq, 1)
	res = &seek.Result{Mode: seek.After, Sequence: seq}
	var all []seek.Message
	for _, s := range subjects {
		r, err := o.at(ctx, seq, s, around)
		if err != nil {
			return nil, nil, nil, err
		}
		res.Stream = r.Stream
		res.FirstSeq, res.LastSeq = max(res.FirstSeq, r.FirstSeq), max(res.LastSeq, r.LastSeq)
		if n := r.Message; n != nil && (res.Message == nil || n.Sequence < res.Message.Sequence) {
			res.Message = n
		}
		all = append(all, r.Neighbours...)
	}
	slices.SortFunc(all, func(a, b seek.Message) int { return cmpSeq(a.Sequence, b.Sequence) })
	all = slices.CompactFunc(all, func(a, b seek.Message) bool { return a.Sequence == b.Sequence })
	if res.Message != nil {
		res.Sequence = res.Message.Sequence
	} else if res.Sequence <= res.LastSeq {
		res.Sequence = res.LastSeq + 1
	}
	for _, m := range all {
		if m.Sequence < seq {
			before = append(before, m)
		} else {
			after = append(after, m)
		}
	}
	if len(before) > around {
		before = before[len(before)-around:]
	}
	return res, before, after, nil
}

func cmpSeq(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
