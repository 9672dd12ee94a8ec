package replica

import (
	"context"
	"math"
	"time"

	"github.com/jsctl/jsctl/jsutil"
)

// Lag is a mirror's or sourcing stream's replication lag against an origin.
type Lag struct {
	Origin, Target string
	// Messages counts the origin's sequences from the first message the
	// target should have copied but has not, to the origin's last (0 when
	// caught up).
	Messages uint64
	// Age is how long ago the origin stored that first message not yet
	// copied (0 when caught up), by this machine's clock.
	Age time.Duration
	// LastOriginSeq is the origin's last sequence; LastCopiedSeq the last
	// origin sequence the target has copied (the least over several sources
	// of the same origin that lag).
	LastOriginSeq, LastCopiedSeq uint64
	Method                       Method // Mirror or Source
	Requests                     int    // API requests sent
}

// ReplicaLag measures how far target, a mirror or a stream sourcing origin,
// is behind origin.
//
// Errors: an unknown stream wraps jsutil.ErrNotFound; a target that neither
// mirrors nor sources origin (or that copies a stream of that name from
// another domain) wraps jsutil.ErrBadInput.
func ReplicaLag(ctx context.Context, origin Side, target Side) (*Lag, error) {
	t, err := newTranslator(ctx, origin, target)
	if err != nil {
		return nil, err
	}
	if t.oinfo == nil {
		return nil, jsutil.Errorf(jsutil.ErrConnection, "measure the replication lag of %q: origin %q cannot be read", target.Stream, origin.Stream)
	}
	p, err := t.match(ctx)
	if err != nil {
		return nil, err
	}
	lag := &Lag{Origin: origin.Stream, Target: target.Stream, LastOriginSeq: t.oinfo.State.LastSeq}
	type part struct {
		filters []string
		copied  uint64
	}
	var parts []part
	switch {
	case p.mirror:
		lag.Method = Mirror
		parts = append(parts, part{p.mirrorFilters, t.tinfo.State.LastSeq})
	case len(p.sources) > 0:
		lag.Method = Source
		for _, r := range p.sources {
			_, _, copied, err := t.search(ctx, r, math.MaxUint64)
			if err != nil {
				return nil, err
			}
			parts = append(parts, part{r.filters, copied})
		}
	default:
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "measure the replication lag of %q: %s", target.Stream, p.reason)
	}
	lag.LastCopiedSeq = math.MaxUint64
	for _, pt := range parts {
		m, err := t.firstPending(ctx, pt.filters, pt.copied+1)
		if err != nil {
			return nil, err
		}
		if m != nil && (lag.Messages == 0 || lag.LastOriginSeq-m.Sequence+1 > lag.Messages) {
			lag.Messages = lag.LastOriginSeq - m.Sequence + 1
			lag.Age = max(time.Since(m.Time), 0)
			lag.LastCopiedSeq = pt.copied
		}
		if lag.Messages == 0 {
			lag.LastCopiedSeq = min(lag.LastCopiedSeq, pt.copied)
		}
	}
	if lag.LastCopiedSeq == math.MaxUint64 {
		lag.LastCopiedSeq = 0
	}
	lag.Requests = t.requests()
	return lag, nil
}
