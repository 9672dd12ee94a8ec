package acks

import (
	"context"
	"fmt"
	"time"

	"github.com/jsctl/jsctl/jsutil"
)

// Incarnations. A stream deleted and created again under its name is
// another stream: its sequences start again from 1, so a floor range or a
// sequence-keyed record of the first proves nothing about the messages of
// the second. Floor ranges and records carry the creation times of the
// stream (sc) and consumer (cr, cc) they were written for; those written
// by earlier versions, which do not say, are judged by time: a consumer of
// a stream is created after it, and a record of it is written after it,
// so a range opened for a consumer created before the stream, or a record
// (or floor) last written before the stream was created, belongs to an
// earlier stream of that name.
//
// Such a range or record is ignored and reported (a warning naming the
// scope and both creation times), never trusted, and not deleted: a
// sequence-keyed record's key is taken over only when the current stream's
// message of that sequence needs it, and acks forget removes the rest when
// asked. Records keyed by a value (a header, a JSON field ...) are not
// bound to one stream: they dedupe a message whatever stream carries it.

// stamp is a creation time as records hold it: RFC 3339 in UTC with
// nanoseconds ("" for the zero time). A string, so that it survives any
// JSON tool exactly (a number of nanoseconds does not fit a float).
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func stampPtr(t *time.Time) string {
	if t == nil {
		return ""
	}
	return stamp(*t)
}

// parseStamp reads a stamp: nil for "", and bad for one that does not read
// (a record written by hand: it then vouches for no incarnation).
func parseStamp(s string) (t *time.Time, bad bool) {
	if s == "" {
		return nil, false
	}
	p, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil, true
	}
	p = p.UTC()
	return &p, false
}

// streamState is what Store asks of a stream: its last sequence and when
// it was created.
type streamState struct {
	lastSeq uint64
	created time.Time
}

// streamOf reads stream's state from the server.
func (s *Store) streamOf(ctx context.Context, stream string) (streamState, error) {
	st, err := s.js.Stream(ctx, stream)
	if err != nil {
		return streamState{}, jsutil.Wrap(err, "get stream %q", stream)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return streamState{}, jsutil.Wrap(err, "get stream %q", stream)
	}
	return streamState{lastSeq: info.State.LastSeq, created: info.Created}, nil
}

// knowStream makes sure j knows its stream's creation time, asking the
// server when the run did not say.
func (s *Store) knowStream(ctx context.Context, j *job) error {
	if !j.streamCreated.IsZero() {
		return nil
	}
	st, err := s.streamOf(ctx, j.d.Stream)
	if err != nil {
		return err
	}
	j.streamCreated = st.created
	return nil
}

// rangeStale says why range r of a floor last written at updated belongs
// to another incarnation of its stream, created now at created ("" when it
// does not, or cannot be told).
func rangeStale(r FloorRange, updated, created time.Time) string {
	if created.IsZero() {
		return ""
	}
	switch {
	case r.Stream != "":
		t, _ := parseStamp(r.Stream)
		if t == nil {
			return fmt.Sprintf("recorded for a stream created %q (not a time)", r.Stream)
		}
		if !t.Equal(created) {
			return "recorded for the stream created " + jsutil.CreatedText(t)
		}
	case r.Created != 0:
		if t := time.Unix(0, r.Created); t.Before(created) {
			return "recorded for a consumer created " + jsutil.CreatedText(&t) + ", before the stream"
		}
	case !updated.IsZero() && updated.Before(created):
		return "in a floor last written " + jsutil.CreatedText(&updated) + ", before the stream was created"
	}
	return ""
}

// judge marks the ranges of f that belong to another incarnation of its
// stream (created now at created; zero: not known, nothing is judged):
// they cover nothing and are listed in f.Stale. The ranges stay in the
// floor as they are.
func (f *Floor) judge(created time.Time) {
	f.Stale = nil
	for i := range f.Ranges {
		r := &f.Ranges[i]
		r.stale = rangeStale(*r, f.Updated, created)
		if r.stale != "" {
			f.Stale = append(f.Stale, fmt.Sprintf("range (%d, %d] of the floor of consumer %q in scope %q was %s; stream %q was created %s: ignored (it proves nothing about this stream's messages)",
				r.From, r.To, f.Consumer, f.Scope, r.stale, f.Stream, jsutil.CreatedText(&created)))
		}
	}
	f.Seq = f.end()
}

// recordStale says why sequence-keyed record r belongs to another
// incarnation of stream, created now at created ("" when it does not, or
// cannot be told, and for records keyed by a value).
func recordStale(r Record, stream string, created time.Time) string {
	if r.KeyFrom != KeyFromSequence || created.IsZero() {
		return ""
	}
	var then string
	switch {
	case r.badStamp:
		then = "written for a stream whose creation time does not read"
	case r.StreamCreated != nil:
		if r.StreamCreated.Equal(created) {
			return ""
		}
		then = "written for the stream created " + jsutil.CreatedText(r.StreamCreated)
	case !r.Time.IsZero() && r.Time.Before(created):
		then = "written " + jsutil.CreatedText(&r.Time) + ", before the stream was created"
	default:
		return ""
	}
	return fmt.Sprintf("ack record %q (message %d) in scope %q was %s; stream %q was created %s: ignored (it proves nothing about this stream's message %d)",
		r.KVKey, r.Seq, ScopeDisplay(r.Scope), then, stream, jsutil.CreatedText(&created), r.Seq)
}

// staleForJob is recordStale for the record r found under j's key.
func (s *Store) staleForJob(ctx context.Context, j *job, r Record) string {
	if r.KeyFrom != KeyFromSequence || j.d.Retry {
		return ""
	}
	if err := s.knowStream(ctx, j); err != nil {
		return ""
	}
	return recordStale(r, j.d.Stream, j.streamCreated)
}

// JudgeRecords marks the sequence-keyed records of recs that belong to
// another incarnation of stream (Record.Stale); stream's creation time is
// asked of the server once. A stream that cannot be read judges nothing.
func (s *Store) JudgeRecords(ctx context.Context, stream string, recs []Record) {
	st, err := s.streamOf(ctx, stream)
	if err != nil {
		return
	}
	for i := range recs {
		recs[i].Stale = recordStale(recs[i], stream, st.created)
	}
}

// judge marks the sequence-keyed records of recs that belong to another
// incarnation of their scope's stream (see ScopeStream). A scope whose
// stream cannot be told, or read, judges nothing.
func (s *Store) judge(ctx context.Context, recs []Record) {
	byScope := map[string][]int{}
	for i, r := range recs {
		if r.KeyFrom == KeyFromSequence {
			byScope[r.Scope] = append(byScope[r.Scope], i)
		}
	}
	for scope, idx := range byScope {
		stream, err := s.ScopeStream(ctx, scope)
		if err != nil {
			continue
		}
		st, err := s.streamOf(ctx, stream)
		if err != nil {
			continue
		}
		for _, i := range idx {
			recs[i].Stale = recordStale(recs[i], stream, st.created)
		}
	}
}
