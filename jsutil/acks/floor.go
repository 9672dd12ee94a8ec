package acks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// A floor says which messages a consumer handled, so that their records may
// be compacted (or expire) and a redelivery still counts as a duplicate.
//
// Each consumer has its own floor in each scope it uses (scopes may be
// shared, consumers of one scope may have different filters). A floor is a
// short list of ranges of stream sequences, each with the consumer's
// filters and creation time when it was opened: every message in (From,To]
// whose subject matches the range's filters was handled for this consumer
// (done, a duplicate of a done record, or outside the idempotent subjects).
// Consume extends the last range to the consumer's ack floor as it runs:
// Process acks a message only once its record is done, so the ack floor
// passing a message proves it was handled. A new range is opened, instead
// of extending, whenever that proof does not reach back to the range's end:
//   - when Consume starts and the consumer's ack floor is past the range's
//     end (something else moved it, or a run stopped before recording);
//   - when the consumer's filters or creation time changed (it was edited,
//     or recreated by a reset);
//   - when a forward move skips messages (Store.NoteForwardMove).
//
// A floor whose end lies past the stream's last sequence cannot be true
// (someone wrote it by hand): it is reported as corrupt and ignored.

// maxFloorRanges bounds a floor record: the oldest range is dropped first,
// which only ever makes the floor cover less.
const maxFloorRanges = 16

// FloorRange is one range of a floor (see Floor).
type FloorRange struct {
	From    uint64   `json:"b"`
	To      uint64   `json:"e"`
	Filters []string `json:"fs"`
	// Created is the consumer's creation time (Unix ns) when the range was
	// opened; Stream the stream's (0: not recorded, by an earlier version).
	Created int64  `json:"cr"`
	Stream  string `json:"sc,omitempty"` // RFC 3339, as records hold it
	// stale says why the range belongs to another incarnation of the
	// stream (see Floor.judge): it covers nothing.
	stale string
}

// covers reports whether the range proves that message seq on subject was
// handled.
func (r FloorRange) covers(seq uint64, subject string) bool {
	return r.stale == "" && seq > r.From && seq <= r.To && (len(r.Filters) == 0 || matchAny(r.Filters, subject))
}

// floorValue is the stored form of a consumer's floor.
type floorValue struct {
	Stream   string       `json:"st"`
	Consumer string       `json:"c"`
	Ranges   []FloorRange `json:"rg"`
	// Seq is a legacy scope-wide floor's value.
	Seq uint64 `json:"q,omitempty"`
	// Retention is the retention (seconds) of the records the consumer's
	// last run wrote: the floor outlives them, so it says how long they
	// were kept after they expired.
	Retention int64 `json:"rt,omitempty"`
}

// Floor is one consumer's floor in a scope.
type Floor struct {
	// Scope is the scope as a person wrote it; Stream and Consumer name the
	// consumer (empty for a legacy scope-wide floor).
	Scope    string `json:"scope"`
	Stream   string `json:"stream"`
	Consumer string `json:"consumer"`
	// Seq is the end of the last range: the consumer's ack floor when the
	// floor was last advanced.
	Seq    uint64       `json:"seq"`
	Ranges []FloorRange `json:"ranges"`
	// Legacy marks a scope-wide floor written by an earlier version; it is
	// honoured only for its own consumer's default scope.
	Legacy bool `json:"legacy,omitempty"`
	// Retention is how long the records of the consumer's last run are
	// kept (0: not recorded, by an earlier version).
	Retention time.Duration `json:"retention_ns,omitempty"`
	// Corrupt says why the floor cannot be true (it is then ignored).
	Corrupt string `json:"corrupt,omitempty"`
	// Stale lists the ranges that belong to another incarnation of the
	// stream (see incarnation.go): they are kept, and cover nothing.
	Stale    []string  `json:"stale,omitempty"`
	Revision uint64    `json:"revision"`
	Updated  time.Time `json:"updated"`

	key   string
	scope string // encoded
}

// Covers reports whether the floor proves that message seq on subject was
// handled. A corrupt floor covers nothing.
func (f Floor) Covers(seq uint64, subject string) bool {
	if f.Corrupt != "" {
		return false
	}
	for _, r := range f.Ranges {
		if r.covers(seq, subject) {
			return true
		}
	}
	return false
}

// end is the highest sequence any range of this stream reaches.
func (f Floor) end() uint64 {
	var e uint64
	for _, r := range f.Ranges {
		if r.stale != "" {
			continue
		}
		e = max(e, r.To)
	}
	return e
}

// FloorRef names one consumer's floor: a scope (DefaultScope, ScopeName)
// and the consumer.
type FloorRef struct {
	Scope, Stream, Consumer string
}

func (r FloorRef) check() error {
	if err := CheckScope(r.Scope); err != nil {
		return err
	}
	if r.Stream == "" || r.Consumer == "" {
		return jsutil.Errorf(jsutil.ErrBadInput, "floor of scope %q needs a stream and a consumer", ScopeDisplay(r.Scope))
	}
	return nil
}

// ReadFloor returns a consumer's floor in a scope (with no ranges when it
// has none), read from the bucket's leader. A legacy scope-wide floor is
// read only for the consumer's own default scope. The floor is not checked
// against the stream here (see CheckFloor).
func (s *Store) ReadFloor(ctx context.Context, ref FloorRef) (Floor, error) {
	if err := ref.check(); err != nil {
		return Floor{}, err
	}
	f, err := s.readFloorKey(ctx, floorKey(ref.Scope, ref.Stream, ref.Consumer))
	if err != nil || f.Revision != 0 || ref.Scope != DefaultScope(ref.Stream, ref.Consumer) {
		return f, err
	}
	lf, err := s.readFloorKey(ctx, legacyFloorKey(ref.Scope))
	if err != nil || lf.Revision == 0 {
		return f, err
	}
	// A legacy floor of the consumer's own default scope: everything up to
	// it was acked by jsctl for this consumer (it was the only writer).
	lf.Stream, lf.Consumer = ref.Stream, ref.Consumer
	return lf, nil
}

// readFloorKey reads one floor record; a missing key is a Floor with
// revision 0.
func (s *Store) readFloorKey(ctx context.Context, k string) (Floor, error) {
	scope, stream, consumer, legacy, ok := parseFloorKey(k)
	if !ok {
		return Floor{}, jsutil.Errorf(jsutil.ErrBadInput, "key %q in bucket %q is not a floor key", k, s.bucket)
	}
	f := Floor{Scope: ScopeDisplay(scope), scope: scope, Stream: stream, Consumer: consumer, Legacy: legacy, key: k, Ranges: []FloorRange{}}
	e, err := s.leaderGet(ctx, k)
	if isNotFound(err) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("get floor %q: %w", k, err)
	}
	f.Revision, f.Updated = e.rev, e.created
	s.decodeFloor(&f, e.value)
	return f, nil
}

// decodeFloor fills f from a stored value; a value that does not read
// makes a corrupt floor (reported, never trusted).
func (s *Store) decodeFloor(f *Floor, data []byte) {
	var v floorValue
	if err := json.Unmarshal(data, &v); err != nil {
		f.Corrupt = fmt.Sprintf("unreadable: %v", err)
		return
	}
	if f.Legacy {
		f.Ranges = []FloorRange{{From: 0, To: v.Seq}}
	} else {
		if v.Stream != f.Stream || v.Consumer != f.Consumer {
			f.Corrupt = fmt.Sprintf("written for consumer %q of stream %q", v.Consumer, v.Stream)
			return
		}
		f.Ranges = v.Ranges
		f.Retention = time.Duration(v.Retention) * time.Second
		if f.Ranges == nil {
			f.Ranges = []FloorRange{}
		}
		for _, r := range f.Ranges {
			if r.To < r.From {
				f.Corrupt = fmt.Sprintf("range (%d, %d] ends before it starts", r.From, r.To)
				return
			}
		}
	}
	f.Seq = f.end()
}

// CheckFloor marks f corrupt when it reaches past lastSeq, the stream's
// last sequence: no consumer can have acknowledged a message the stream
// never had.
func CheckFloor(f *Floor, lastSeq uint64) {
	if f.Corrupt == "" && f.end() > lastSeq {
		f.Corrupt = fmt.Sprintf("reaches sequence %d, past the stream's last sequence %d", f.end(), lastSeq)
	}
}

// floorPos is what Consume knows of its consumer when it advances the
// floor.
type floorPos struct {
	ackFloor uint64
	filters  []string
	created  int64
	// start: the run is starting, so a range that ends below the ack floor
	// must not be extended (the gap is not proven).
	start bool
	// lastSeq is a sequence the stream is known to have reached.
	lastSeq uint64
	// stream is the stream's creation time (Unix ns; 0: not known).
	stream string
}

// advance returns the ranges after the consumer's ack floor reached
// p.ackFloor, and whether they changed.
func (f Floor) advance(p floorPos) ([]FloorRange, bool) {
	rs := slices.Clone(f.Ranges) // a legacy floor's one range carries over
	if f.Corrupt != "" {
		rs = nil // a corrupt floor is replaced
	}
	if n := len(rs); n > 0 {
		last := &rs[n-1]
		same := last.stale == "" && last.Created == p.created && slices.Equal(last.Filters, p.filters) &&
			(last.Stream == "" || p.stream == "" || last.Stream == p.stream)
		switch {
		case same && p.ackFloor <= last.To:
			return rs, f.Corrupt != ""
		case same && !(p.start && p.ackFloor > last.To):
			last.To = p.ackFloor
			if last.Stream == "" {
				last.Stream = p.stream
			}
			return rs, true
		}
	}
	rs = append(rs, FloorRange{From: p.ackFloor, To: p.ackFloor, Filters: p.filters, Created: p.created, Stream: p.stream})
	if len(rs) > maxFloorRanges {
		rs = rs[len(rs)-maxFloorRanges:]
	}
	return rs, true
}

// writeFloor stores ranges as ref's floor by compare-and-set on rev (0:
// the key must have no value), never expiring, with the retention of the
// consumer's records.
func (s *Store) writeFloor(ctx context.Context, ref FloorRef, ranges []FloorRange, rev uint64, retention time.Duration) error {
	val, err := json.Marshal(floorValue{Stream: ref.Stream, Consumer: ref.Consumer, Ranges: ranges, Retention: int64(retention / time.Second)})
	if err != nil {
		return err
	}
	k := floorKey(ref.Scope, ref.Stream, ref.Consumer)
	_, err = s.publish(ctx, k, val, rev, ttlNever)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) && rev == 0 {
		// A marker (a forgotten floor) is in the way: replace it.
		if e, gerr := s.leaderGet(ctx, k); e.marker && isNotFound(gerr) {
			_, err = s.publish(ctx, k, val, e.rev, ttlNever)
		}
	}
	return err
}

// updateFloor reads ref's floor, lets change compute new ranges, and writes
// them by compare-and-set, retrying when another writer got there first.
// It returns the floor as written (or as found when nothing changed). The
// floor is written with retention (0: the one it has).
func (s *Store) updateFloor(ctx context.Context, ref FloorRef, retention time.Duration, change func(Floor) ([]FloorRange, bool)) (Floor, error) {
	if err := ref.check(); err != nil {
		return Floor{}, err
	}
	for attempt := 0; attempt < 10; attempt++ {
		cur, err := s.ReadFloor(ctx, ref)
		if err != nil {
			return cur, err
		}
		rs, changed := change(cur)
		if !changed {
			return cur, nil
		}
		rev := cur.Revision
		if cur.Legacy {
			rev = 0 // the per-consumer key is new
		}
		ret := retention
		if ret == 0 {
			ret = cur.Retention
		}
		err = s.writeFloor(ctx, ref, rs, rev, ret)
		if err == nil {
			if cur.Legacy {
				// Its one range now lives in the consumer's own floor.
				_ = s.purge(ctx, cur.key, cur.Revision)
			}
			cur.Ranges, cur.Legacy, cur.Corrupt, cur.Retention = rs, false, "", ret
			cur.Seq = cur.end()
			return cur, nil
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return cur, jsutil.Wrap(err, "set floor of consumer %q in scope %q of bucket %q", ref.Consumer, ScopeDisplay(ref.Scope), s.bucket)
		}
	}
	return Floor{}, jsutil.Errorf(jsutil.ErrConflict, "set floor of consumer %q in scope %q of bucket %q: too many concurrent changes", ref.Consumer, ScopeDisplay(ref.Scope), s.bucket)
}

// AdvanceFloor records that the consumer's ack floor reached the one in
// info, with its current filters and creation time (see Floor). Callers of
// Process alone call it with their consumer's info; Consume does it as it
// runs. A corrupt floor (see CheckFloor) is replaced by a fresh one; the
// returned string then says why it was corrupt.
func (s *Store) AdvanceFloor(ctx context.Context, ref FloorRef, info *jetstream.ConsumerInfo) (Floor, string, error) {
	p := floorPosOf(info, false)
	if st, err := s.streamOf(ctx, info.Stream); err == nil {
		p.stream = stamp(st.created)
	}
	return s.advanceFloor(ctx, ref, p)
}

// advanceFloor advances ref's floor to p; it returns the floor written and,
// when the one it found was corrupt, why.
func (s *Store) advanceFloor(ctx context.Context, ref FloorRef, p floorPos) (Floor, string, error) {
	var corrupt string
	var stale []string
	f, err := s.updateFloor(ctx, ref, s.retention, func(f Floor) ([]FloorRange, bool) {
		if t, _ := parseStamp(p.stream); t != nil {
			f.judge(*t)
		}
		s.checkEnd(ctx, &f, ref.Stream, &p.lastSeq)
		corrupt, stale = f.Corrupt, f.Stale
		rs, changed := f.advance(p)
		return rs, changed || f.Retention != s.retention
	})
	f.Stale = stale
	return f, corrupt, err
}

// checkEnd checks f against the stream's last sequence (see CheckFloor).
// *known is a sequence the stream is known to have reached; the stream is
// asked only when the floor reaches past it. When the stream cannot be
// asked, the floor is not judged.
func (s *Store) checkEnd(ctx context.Context, f *Floor, stream string, known *uint64) {
	if f.end() <= *known {
		return
	}
	st, err := s.streamOf(ctx, stream)
	if err != nil {
		return
	}
	f.judge(st.created)
	*known = max(*known, st.lastSeq)
	CheckFloor(f, st.lastSeq)
}

func floorPosOf(info *jetstream.ConsumerInfo, start bool) floorPos {
	fs := slices.Clone(consumerFilters(info.Config))
	slices.Sort(fs)
	return floorPos{ackFloor: info.AckFloor.Stream, filters: fs, created: info.Created.UnixNano(), start: start,
		lastSeq: info.Delivered.Stream + info.NumPending}
}

func consumerFilters(cfg jetstream.ConsumerConfig) []string {
	if cfg.FilterSubject != "" {
		return []string{cfg.FilterSubject}
	}
	return cfg.FilterSubjects
}

// NoteForwardMove records that a consumer was moved forward in place to
// target, skipping messages it had not handled: its floor opens a new range
// at target-1, so the skipped messages are never counted as handled.
// (A recreate needs no note: the consumer's creation time changes.)
func (s *Store) NoteForwardMove(ctx context.Context, ref FloorRef, info *jetstream.ConsumerInfo, target uint64) error {
	p := floorPosOf(info, false)
	p.ackFloor = target - 1
	_, err := s.updateFloor(ctx, ref, 0, func(f Floor) ([]FloorRange, bool) {
		if f.Revision == 0 {
			return nil, false // no floor: nothing to protect
		}
		rs := slices.Clone(f.Ranges)
		if st, err := s.streamOf(ctx, info.Stream); err == nil {
			p.stream = stamp(st.created)
		}
		return append(rs, FloorRange{From: p.ackFloor, To: p.ackFloor, Filters: p.filters, Created: p.created, Stream: p.stream}), true
	})
	return err
}

// Floors lists the floors of scope, one per consumer that consumed with it
// (and a legacy scope-wide one, if any).
func (s *Store) Floors(ctx context.Context, scope string) ([]Floor, error) {
	if err := CheckScope(scope); err != nil {
		return nil, err
	}
	var out []Floor
	err := s.scan(ctx, floorPrefix+scope+".*", func(e jetstream.KeyValueEntry) error {
		sc, st, co, legacy, ok := parseFloorKey(e.Key())
		if !ok || legacy || sc != scope {
			return nil
		}
		f := Floor{Scope: ScopeDisplay(sc), scope: sc, Stream: st, Consumer: co, key: e.Key(), Revision: e.Revision(), Updated: e.Created()}
		s.decodeFloor(&f, e.Value())
		out = append(out, f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	lf, err := s.readFloorKey(ctx, legacyFloorKey(scope))
	if err != nil {
		return nil, err
	}
	if lf.Revision != 0 {
		out = append(out, lf)
	}
	return out, nil
}

// LowerFloors takes the messages from seq on out of every floor of scope,
// so that they run again once their records are forgotten (the old floor
// "lowered to seq-1").
func (s *Store) LowerFloors(ctx context.Context, scope string, seq uint64) error {
	floors, err := s.Floors(ctx, scope)
	if err != nil {
		return err
	}
	for _, f := range floors {
		if f.Legacy {
			if f.Seq >= seq {
				if err := s.purge(ctx, f.key, f.Revision); err != nil && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
					return jsutil.Wrap(err, "lower floor of scope %q in bucket %q", f.Scope, s.bucket)
				}
			}
			continue
		}
		ref := FloorRef{Scope: scope, Stream: f.Stream, Consumer: f.Consumer}
		if _, err := s.updateFloor(ctx, ref, 0, func(f Floor) ([]FloorRange, bool) { return clip(f.Ranges, seq) }); err != nil {
			return err
		}
	}
	return nil
}

// clip removes the sequences from seq on from ranges.
func clip(ranges []FloorRange, seq uint64) ([]FloorRange, bool) {
	out := []FloorRange{}
	changed := false
	for _, r := range ranges {
		switch {
		case r.To < seq:
			out = append(out, r)
		case r.From+1 < seq:
			r.To = seq - 1
			out = append(out, r)
			changed = true
		default:
			changed = true
		}
	}
	return out, changed
}

// ScopeFloor is the lowest floor of scope's consumers: every consumer has
// handled its messages up to it (0 when there is no floor, or one is
// corrupt).
func (s *Store) ScopeFloor(ctx context.Context, scope string) (uint64, error) {
	floors, err := s.checkedFloors(ctx, scope)
	if err != nil {
		return 0, err
	}
	return lowestFloor(floors), nil
}

func lowestFloor(floors []Floor) uint64 {
	var low uint64
	for i, f := range floors {
		if f.Corrupt != "" {
			return 0
		}
		if i == 0 || f.Seq < low {
			low = f.Seq
		}
	}
	return low
}
