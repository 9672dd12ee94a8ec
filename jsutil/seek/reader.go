package seek

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
)

// Reader reads single messages of one stream by sequence with the same
// message-get requests seek sends (honouring the handle's domain or API
// prefix, asking again when an answer is lost). Other packages use it to
// search a stream by something other than time (jsutil/replica searches
// by the origin sequence a replica records).
type Reader struct {
	g        *apiGetter
	requests int
}

// NewReader returns a Reader of stream on js.
func NewReader(js jetstream.JetStream, stream string) (*Reader, error) {
	g, err := newAPIGetter(js, stream)
	if err != nil {
		return nil, err
	}
	return &Reader{g: g}, nil
}

// Next returns the first message with sequence ≥ seq whose subject matches
// subject ("" or ">" for any), stepping over deleted sequences on the
// server, or nil when there is none.
func (r *Reader) Next(ctx context.Context, seq uint64, subject string) (*Message, error) {
	if subject == "" {
		subject = ">"
	}
	r.requests++
	return r.g.get(ctx, getRequest{Seq: max(seq, 1), NextFor: subject})
}

// Requests is the number of message-get requests sent so far.
func (r *Reader) Requests() int { return r.requests }

// At returns what Seek returns for a position given as a sequence rather
// than a time: the first message matching opts.Subject at or after seq
// (Result.Message, nil when none) with opts.Around neighbours on each side,
// Sequence set to its sequence (LastSeq+1 when none). Target and Mode are
// left for the caller to fill (zero and After); Used is empty.
func At(ctx context.Context, js jetstream.JetStream, stream string, seq uint64, opts Options) (*Result, error) {
	if err := opts.normalize(); err != nil {
		return nil, err
	}
	g, err := newAPIGetter(js, stream)
	if err != nil {
		return nil, err
	}
	s := &searcher{g: g, filter: opts.Subject}
	if err := s.loadState(ctx); err != nil {
		return nil, err
	}
	res := &Result{Stream: stream, Mode: After, Subject: opts.Subject, FirstSeq: s.state.FirstSeq, LastSeq: s.state.LastSeq}
	msg, err := s.next(ctx, max(seq, 1))
	if err != nil {
		return nil, err
	}
	res.Message = msg
	res.Sequence = max(seq, 1)
	if msg != nil {
		res.Sequence = msg.Sequence
	} else if res.Sequence <= s.state.LastSeq {
		res.Sequence = s.state.LastSeq + 1
	}
	if opts.Around > 0 || msg != nil {
		res.Neighbours, err = s.neighbours(ctx, res.Sequence, msg, opts.Around)
		if err != nil {
			return nil, err
		}
	}
	return res, nil
}
