package acks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// checkedFloors lists scope's floors, each checked against its stream's
// last sequence (a floor of a stream that no longer exists is corrupt).
func (s *Store) checkedFloors(ctx context.Context, scope string) ([]Floor, error) {
	floors, err := s.Floors(ctx, scope)
	if err != nil {
		return nil, err
	}
	last := map[string]streamState{}
	for i := range floors {
		f := &floors[i]
		if f.Legacy {
			stream, _, ok := strings.Cut(scope, ".")
			if d, err := jsutil.KeyTokenDecode(stream); ok && err == nil {
				f.Stream = d
			}
		}
		if f.Stream == "" || f.Corrupt != "" {
			continue
		}
		st, ok := last[f.Stream]
		if !ok {
			st, err = s.streamOf(ctx, f.Stream)
			if errors.Is(err, jsutil.ErrNotFound) {
				f.Corrupt = fmt.Sprintf("stream %q does not exist", f.Stream)
				continue
			}
			if err != nil {
				return nil, err
			}
			last[f.Stream] = st
		}
		f.judge(st.created)
		CheckFloor(f, st.lastSeq)
	}
	return floors, nil
}

// lastSeq is the last sequence of stream.
func (s *Store) lastSeq(ctx context.Context, stream string) (uint64, error) {
	st, err := s.js.Stream(ctx, stream)
	if err != nil {
		return 0, jsutil.Wrap(err, "get stream %q", stream)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return 0, jsutil.Wrap(err, "get stream %q", stream)
	}
	return info.State.LastSeq, nil
}

// compactable reports whether the done record of message seq may go: every
// floor of its scope reaches over seq. A consumer of the scope whose filter
// matches the message then has it covered; one whose filter does not will
// never receive it.
func compactable(floors []Floor, seq uint64) bool {
	if len(floors) == 0 {
		return false
	}
	for _, f := range floors {
		if f.Corrupt != "" {
			return false
		}
		in := false
		for _, r := range f.Ranges {
			if r.stale == "" && seq > r.From && seq <= r.To {
				in = true
				break
			}
		}
		if !in {
			return false
		}
	}
	return true
}

// Compact deletes the done records of scope that every floor of the scope
// covers: a redelivery of such a message still counts as a duplicate. It
// returns how many it deleted.
func (s *Store) Compact(ctx context.Context, scope string) (int, error) {
	recs, err := s.Compactable(ctx, scope)
	if err != nil {
		return 0, err
	}
	return s.forget(ctx, recs)
}

// Compactable lists the done records of scope that Compact would delete
// (Forget deletes them).
//
// A record that does not read is skipped (Compact leaves it); bad, when not
// nil, is given each (a *CorruptRecord).
func (s *Store) Compactable(ctx context.Context, scope string, bad ...func(error)) ([]Record, error) {
	c, err := s.PlanCompact(ctx, scope, bad...)
	return c.Records, err
}

// Compaction is what Compact would do in a scope, and what it ignores.
type Compaction struct {
	// Floor is the scope's floor (ScopeFloor); Floors are its consumers'
	// floors as judged: a corrupt one (Floor.Corrupt) and the ranges of an
	// earlier stream of the name (Floor.Stale) cover nothing.
	Floor  uint64
	Floors []Floor
	// Records are the done records every floor covers (Compact deletes
	// them). StaleRecords counts the sequence-keyed records of the scope
	// of an earlier stream of the name (see Record.Stale): they prove
	// nothing and are kept, whatever the floors cover.
	Records      []Record
	StaleRecords int
}

// PlanCompact finds what Compact would delete in scope, with the floors
// and the records it ignores. A record that does not read is skipped; bad,
// when not nil, is given each (a *CorruptRecord).
func (s *Store) PlanCompact(ctx context.Context, scope string, bad ...func(error)) (Compaction, error) {
	var c Compaction
	floors, err := s.checkedFloors(ctx, scope)
	if err != nil {
		return c, err
	}
	c.Floors, c.Floor = floors, lowestFloor(floors)
	var seqKeyed []Record
	err = s.scanRecords(ctx, scope, func(r Record) error {
		if r.KeyFrom == KeyFromSequence {
			seqKeyed = append(seqKeyed, r)
		}
		if r.State == StateDone && compactable(floors, r.Seq) {
			c.Records = append(c.Records, r)
		}
		return nil
	}, func(err error) {
		for _, b := range bad {
			b(err)
		}
	})
	if err != nil {
		return c, fmt.Errorf("compact ack records of scope %q: %w", ScopeDisplay(scope), err)
	}
	// A record of an earlier stream of the name is not this stream's
	// message, whatever the floor covers: it is left for acks forget.
	s.judge(ctx, seqKeyed)
	stale := map[string]bool{}
	for _, r := range seqKeyed {
		if r.Stale != "" {
			c.StaleRecords++
			stale[r.KVKey] = true
		}
	}
	c.Records = slices.DeleteFunc(c.Records, func(r Record) bool { return stale[r.KVKey] })
	return c, nil
}

// ScopeStats summarises one scope.
type ScopeStats struct {
	Scope   string `json:"scope"`
	Records int    `json:"records"`
	Claims  int    `json:"claims"`
	Done    int    `json:"done"`
	Failed  int    `json:"failed"`
	// Corrupt counts the records that do not read (or are not what their
	// key says: another message's, another scope's), skipped everywhere;
	// CorruptKeys names them (acks forget --corrupt removes them).
	Corrupt     int      `json:"corrupt"`
	CorruptKeys []string `json:"corrupt_keys"`
	Bytes       int      `json:"bytes"`
	MinSeq      uint64   `json:"min_seq"`
	MaxSeq      uint64   `json:"max_seq"`
	// Floor is the lowest floor of the scope's consumers (0 when one is
	// corrupt or there is none); Floors has each consumer's.
	Floor  uint64  `json:"floor"`
	Floors []Floor `json:"floors"`
	// CorruptFloors counts floors that cannot be true (ignored).
	CorruptFloors int `json:"corrupt_floors"`
	// StaleRanges counts floor ranges of an earlier stream of the name
	// (ignored, see Floor.Stale); StaleRecords the sequence-keyed records
	// of one (see Record.Stale).
	StaleRanges  int `json:"stale_ranges"`
	StaleRecords int `json:"stale_records"`
	// Compactable counts done records every floor covers.
	Compactable int `json:"compactable"`
	// RetentionNS is how long done and failed records are kept: the
	// retention the scope's newest record was written with (when no
	// record says, its newest floor's: a floor keeps the retention of its
	// consumer's last run), capped by the bucket's max age (MaxAgeNS, 0:
	// none). RetentionFrom says where it came from: "records", or
	// "default" when neither says (earlier versions wrote none): then it
	// is this store's retention. RetentionMinNS and RetentionMaxNS are
	// the shortest and longest retention the records present carry
	// (capped the same way; 0 when none says): records written by runs
	// with different --retention keep their own.
	RetentionNS    int64  `json:"retention_ns"`
	RetentionFrom  string `json:"retention_from"`
	RetentionMinNS int64  `json:"retention_min_ns"`
	RetentionMaxNS int64  `json:"retention_max_ns"`
	MaxAgeNS       int64  `json:"max_age_ns"`
	// DeadLettered counts failed records whose message was dead-lettered;
	// DeadLetterPending those whose dead letter is not yet published.
	DeadLettered      int `json:"dead_lettered"`
	DeadLetterPending int `json:"dead_letter_pending"`
	// Unreadable has the error of each record counted in Corrupt (a
	// *CorruptRecord, naming its key); StaleList the records counted in
	// StaleRecords (Record.Stale says why each proves nothing). Callers
	// that count what a scope holds of the current stream leave both out
	// and report them (acks ls lists them).
	Unreadable []error  `json:"-"`
	StaleList  []Record `json:"-"`
}

// retentionTracker finds the retention of a scope's newest record, or,
// when no record says, of its newest floor (a floor keeps the retention of
// its consumer's last run, and outlives the records; a run that wrote no
// record still writes its own retention in the floor, so a floor never
// overrides what the records carry), and the range the records carry.
type retentionTracker struct {
	rec, floor retentionNote
	min, max   time.Duration // over the records
}

type retentionNote struct {
	newest time.Time
	ret    time.Duration
}

func (n *retentionNote) note(at time.Time, ret time.Duration) {
	if ret > 0 && !at.Before(n.newest) {
		n.newest, n.ret = at, ret
	}
}

func (t *retentionTracker) add(r Record) {
	t.rec.note(r.Time, r.Retention)
	if r.Retention > 0 {
		if t.min == 0 || r.Retention < t.min {
			t.min = r.Retention
		}
		t.max = max(t.max, r.Retention)
	}
}

func (t *retentionTracker) floors(fs []Floor) {
	for _, f := range fs {
		t.floor.note(f.Updated, f.Retention)
	}
}

// effective is the retention in effect and where it came from.
func (s *Store) effective(t retentionTracker) (time.Duration, string) {
	ret, from := t.rec.ret, "records"
	if ret == 0 {
		ret = t.floor.ret
	}
	if ret == 0 {
		ret, from = s.retention, "default"
	}
	return s.capped(ret), from
}

// capped caps a retention at the bucket's max age, if it has one.
func (s *Store) capped(ret time.Duration) time.Duration {
	if s.maxAge > 0 && s.maxAge < ret {
		return s.maxAge
	}
	return ret
}

// RangeInfo is what RangeRecords found.
type RangeInfo struct {
	// Records counts the scope's records for stream sequences in the range.
	Records int
	// Corrupt lists the records of the scope that do not read (skipped;
	// each error names its key). Stale counts the sequence-keyed records
	// in the range of an earlier stream of the name (not in Records);
	// StaleWhy is the first one's Record.Stale (naming the scope and both
	// creation times), StaleFrom and StaleTo the lowest and highest
	// sequence they were keyed by.
	Corrupt            []error
	Stale              int
	StaleWhy           string
	StaleFrom, StaleTo uint64
	// Retention is the retention in effect in the scope (see ScopeStats);
	// RetentionKnown is false when no record of the scope says it.
	Retention      time.Duration
	RetentionKnown bool
}

// RangeRecords counts the records of scope whose stream sequence is in
// [from, to] (any state), and finds the retention in effect in the scope,
// in one pass over its records. An unknown scope has none.
func (s *Store) RangeRecords(ctx context.Context, scope string, from, to uint64) (RangeInfo, error) {
	var info RangeInfo
	if err := CheckScope(scope); err != nil {
		return info, err
	}
	var t retentionTracker
	floors, err := s.Floors(ctx, scope)
	if err != nil {
		return info, err
	}
	t.floors(floors)
	f := Filter{FromSeq: from, ToSeq: to}
	var seqKeyed []Record
	err = s.scanRecords(ctx, scope, func(r Record) error {
		t.add(r)
		if f.match(r) {
			info.Records++
			if r.KeyFrom == KeyFromSequence {
				seqKeyed = append(seqKeyed, r)
			}
		}
		return nil
	}, func(err error) { info.Corrupt = append(info.Corrupt, err) })
	if err != nil {
		return info, fmt.Errorf("count ack records of scope %q: %w", ScopeDisplay(scope), err)
	}
	s.judge(ctx, seqKeyed)
	for _, r := range seqKeyed {
		if r.Stale != "" {
			info.Records--
			info.Stale++
			if info.StaleWhy == "" {
				info.StaleWhy = r.Stale
			}
			if info.StaleFrom == 0 || r.Seq < info.StaleFrom {
				info.StaleFrom = r.Seq
			}
			info.StaleTo = max(info.StaleTo, r.Seq)
		}
	}
	var from2 string
	info.Retention, from2 = s.effective(t)
	info.RetentionKnown = from2 == "records"
	return info, nil
}

// Scopes lists the scopes that have records or a floor.
func (s *Store) Scopes(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	add := func(sc string) {
		if !seen[sc] {
			seen[sc] = true
			out = append(out, sc)
		}
	}
	err := s.scan(ctx, ">", func(e jetstream.KeyValueEntry) error {
		k := e.Key()
		if sc, _, _, ok := parseRecordKey(k); ok {
			add(sc)
		} else if sc, _, _, _, ok := parseFloorKey(k); ok {
			add(sc)
		}
		return nil
	}, jetstream.MetaOnly())
	return out, err
}

// Stats summarises scope's records and floors; an unknown scope is an
// error wrapping jsutil.ErrNotFound. A record that does not read is
// counted and named (ScopeStats.CorruptKeys); bad, when not nil, is given
// each (a *CorruptRecord, whose error says why).
func (s *Store) Stats(ctx context.Context, scope string, bad ...func(error)) (ScopeStats, error) {
	st := ScopeStats{Scope: ScopeDisplay(scope), MaxAgeNS: int64(s.maxAge), CorruptKeys: []string{}}
	var rt retentionTracker
	if err := CheckScope(scope); err != nil {
		return st, err
	}
	floors, err := s.checkedFloors(ctx, scope)
	if err != nil {
		return st, err
	}
	st.Floors = floors
	rt.floors(floors)
	if st.Floors == nil {
		st.Floors = []Floor{}
	}
	for _, f := range floors {
		if f.Corrupt != "" {
			st.CorruptFloors++
		}
		st.StaleRanges += len(f.Stale)
	}
	var seqKeyed []Record
	st.Floor = lowestFloor(floors)
	err = s.scanRecords(ctx, scope, func(r Record) error {
		st.Records++
		st.Bytes += r.Size
		rt.add(r)
		if r.DeadLetter != nil {
			st.DeadLettered++
			if r.DeadLetter.Pending {
				st.DeadLetterPending++
			}
		}
		switch r.State {
		case StateClaim:
			st.Claims++
		case StateDone:
			st.Done++
			if compactable(floors, r.Seq) {
				st.Compactable++
			}
		case StateFailed:
			st.Failed++
		}
		if st.MinSeq == 0 || r.Seq < st.MinSeq {
			st.MinSeq = r.Seq
		}
		st.MaxSeq = max(st.MaxSeq, r.Seq)
		if r.KeyFrom == KeyFromSequence {
			seqKeyed = append(seqKeyed, r)
		}
		return nil
	}, func(err error) {
		st.Corrupt++
		st.Records++
		st.Unreadable = append(st.Unreadable, err)
		var ce *CorruptRecord
		if errors.As(err, &ce) {
			st.CorruptKeys = append(st.CorruptKeys, ce.Record.KVKey)
		}
		for _, b := range bad {
			b(err)
		}
	})
	if err != nil {
		return st, err
	}
	s.judge(ctx, seqKeyed)
	for _, r := range seqKeyed {
		if r.Stale != "" {
			st.StaleRecords++
			st.StaleList = append(st.StaleList, r)
			if r.State == StateDone && compactable(floors, r.Seq) {
				st.Compactable--
			}
		}
	}
	ret, from := s.effective(rt)
	st.RetentionNS, st.RetentionFrom = int64(ret), from
	if rt.max > 0 {
		st.RetentionMinNS, st.RetentionMaxNS = int64(s.capped(rt.min)), int64(s.capped(rt.max))
	}
	if st.Records == 0 && len(floors) == 0 {
		return st, s.unknownScope(scope)
	}
	return st, nil
}

// KnownScope returns an error wrapping jsutil.ErrNotFound when scope has no
// records and no floor.
func (s *Store) KnownScope(ctx context.Context, scope string) error {
	if err := CheckScope(scope); err != nil {
		return err
	}
	found := false
	errStop := errors.New("stop")
	for _, filter := range []string{recordPrefix + scope + ".*", floorPrefix + scope + ".*", legacyFloorKey(scope)} {
		err := s.scan(ctx, filter, func(e jetstream.KeyValueEntry) error {
			if sc, _, _, _, ok := parseFloorKey(e.Key()); ok && sc != scope {
				return nil // a floor of a longer scope
			}
			found = true
			return errStop
		}, jetstream.MetaOnly())
		if err != nil && !errors.Is(err, errStop) {
			return err
		}
		if found {
			return nil
		}
	}
	if !found {
		return s.unknownScope(scope)
	}
	return nil
}

func (s *Store) unknownScope(scope string) error {
	return jsutil.Errorf(jsutil.ErrNotFound, "scope %q has no ack records in bucket %q", ScopeDisplay(scope), s.bucket)
}
