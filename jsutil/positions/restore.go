package positions

import (
	"context"
	"slices"
	"strings"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/nats-io/nats.go/jetstream"
)

// PlanRestore plans returning the consumers of snap to where the snapshot
// saved them: each one's next delivery becomes its saved ack floor + 1
// (ConsumerSnapshot.NextSequence), and one deleted since is created again
// from its saved configuration. It makes one jsutil/reset plan per stream,
// in the snapshot's order, so a restore is planned, executed
// (reset.Execute), verified and recorded in history like any other move,
// with the same guards, and can be undone with --to-previous.
//
// consumers selects some of the snapshot's consumers (all when empty): a
// consumer name, or STREAM/CONSUMER where the snapshot holds that name on
// several streams. Nothing changes on the server.
func PlanRestore(ctx context.Context, js jetstream.JetStream, snap *Snapshot, consumers []string, opts reset.Options) ([]*reset.Plan, error) {
	// A document read with Get or Decode is checked already; one built
	// otherwise is checked here, on a copy.
	checked := *snap
	if err := checked.tidy(snap.Name); err != nil {
		return nil, err
	}
	snap = &checked
	picked, err := snap.pick(consumers)
	if err != nil {
		return nil, err
	}
	var plans []*reset.Plan
	for _, ss := range snap.Streams {
		var moves []reset.Move
		for _, cs := range ss.Consumers {
			if picked != nil && !picked[ss.Name+"/"+cs.Name] {
				continue
			}
			moves = append(moves, reset.Move{
				Consumer: cs.Name, Seq: cs.NextSequence(), Config: cs.Config, From: "snapshot " + quote(snap.Name),
				StreamCreated: ss.Created, FloorTime: cs.AckFloor.Time, Created: jsutil.TimePtr(cs.Created),
			})
		}
		if len(moves) == 0 {
			continue
		}
		plan, err := reset.PlanMoves(ctx, js, ss.Name, moves, opts)
		if err != nil {
			return nil, jsutil.Wrap(err, "restore snapshot %q", snap.Name)
		}
		plan.Target.Snapshot = snap.Name
		plans = append(plans, plan)
	}
	return plans, nil
}

// pick resolves consumer names to STREAM/CONSUMER keys of the snapshot;
// nil selects all.
func (s *Snapshot) pick(names []string) (map[string]bool, error) {
	if len(names) == 0 {
		return nil, nil
	}
	out := map[string]bool{}
	for _, n := range names {
		stream, consumer, qualified := strings.Cut(n, "/")
		if !qualified {
			stream, consumer = "", n
		}
		var found []string
		for _, ss := range s.Streams {
			for _, cs := range ss.Consumers {
				if cs.Name == consumer && (stream == "" || ss.Name == stream) {
					found = append(found, ss.Name+"/"+cs.Name)
				}
			}
		}
		switch {
		case len(found) == 0:
			return nil, jsutil.Errorf(jsutil.ErrNotFound, "snapshot %q holds no consumer %s (it holds %s)", s.Name, quote(n), strings.Join(s.ConsumerKeys(), ", "))
		case len(found) > 1:
			return nil, jsutil.Errorf(jsutil.ErrBadInput, "snapshot %q holds consumer %s on several streams (%s): name it as STREAM/CONSUMER", s.Name, quote(n), strings.Join(found, ", "))
		}
		out[found[0]] = true
	}
	return out, nil
}

// ConsumerKeys lists the snapshot's consumers: their names, or
// STREAM/CONSUMER for a name the snapshot holds on several streams.
func (s *Snapshot) ConsumerKeys() []string {
	count := map[string]int{}
	for _, ss := range s.Streams {
		for _, cs := range ss.Consumers {
			count[cs.Name]++
		}
	}
	var out []string
	for _, ss := range s.Streams {
		for _, cs := range ss.Consumers {
			if count[cs.Name] > 1 {
				out = append(out, ss.Name+"/"+cs.Name)
			} else {
				out = append(out, cs.Name)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
