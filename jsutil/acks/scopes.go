package acks

import (
	"context"
	"errors"
	"fmt"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// Floor returns scope's floor (0 when it has none) and the floor record's
// revision. The floor is the highest stream sequence at or below which
// every message of the scope is done (taken from the consumer's ack
// floor); records at or below it may be compacted, and a message at or
// below it with no record counts as done.
func (s *Store) Floor(ctx context.Context, scope string) (uint64, uint64, error) {
	if err := CheckScope(scope); err != nil {
		return 0, 0, err
	}
	k := floorKey(scope)
	e, err := s.leaderGet(ctx, k)
	if isNotFound(err) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("get floor of scope %q: %w", ScopeDisplay(scope), err)
	}
	seq, err := decodeFloor(s.bucket, k, e.value)
	return seq, e.rev, err
}

// AdvanceFloor raises scope's floor to seq (never lowers it), by
// compare-and-set, and returns the floor afterwards.
func (s *Store) AdvanceFloor(ctx context.Context, scope string, seq uint64) (uint64, error) {
	return s.setFloor(ctx, scope, seq, func(cur uint64) bool { return seq > cur })
}

// LowerFloor lowers scope's floor to seq when it is higher (by
// compare-and-set), so messages above seq whose records were forgotten run
// again.
func (s *Store) LowerFloor(ctx context.Context, scope string, seq uint64) error {
	if err := CheckScope(scope); err != nil {
		return err
	}
	return s.lowerFloor(ctx, scope, seq)
}

// lowerFloor lowers scope's floor to seq when it is higher.
func (s *Store) lowerFloor(ctx context.Context, scope string, seq uint64) error {
	_, err := s.setFloor(ctx, scope, seq, func(cur uint64) bool { return seq < cur })
	return err
}

func (s *Store) setFloor(ctx context.Context, scope string, seq uint64, want func(cur uint64) bool) (uint64, error) {
	k := floorKey(scope)
	for attempt := 0; attempt < 10; attempt++ {
		cur, rev, err := s.Floor(ctx, scope)
		if err != nil {
			return 0, err
		}
		if !want(cur) {
			return cur, nil
		}
		if rev == 0 {
			_, err = s.kv.Create(ctx, k, encodeFloor(seq))
		} else {
			_, err = s.kv.Update(ctx, k, encodeFloor(seq), rev)
		}
		if err == nil {
			return seq, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return 0, jsutil.Wrap(err, "set floor of scope %q in bucket %q", ScopeDisplay(scope), s.bucket)
		}
	}
	return 0, jsutil.Errorf(jsutil.ErrConflict, "set floor of scope %q in bucket %q: too many concurrent changes", ScopeDisplay(scope), s.bucket)
}

// Compact deletes the done records of scope at or below its floor: they are
// no longer needed, since a message at or below the floor with no record
// counts as done. It returns how many it deleted.
func (s *Store) Compact(ctx context.Context, scope string) (int, error) {
	floor, _, err := s.Floor(ctx, scope)
	if err != nil || floor == 0 {
		return 0, err
	}
	recs, err := s.List(ctx, Filter{Scope: scope, State: StateDone, ToSeq: floor})
	if err != nil {
		return 0, fmt.Errorf("compact ack records of scope %q: %w", ScopeDisplay(scope), err)
	}
	return s.forget(ctx, recs)
}

// ScopeStats summarises one scope.
type ScopeStats struct {
	Scope   string `json:"scope"`
	Records int    `json:"records"`
	Claims  int    `json:"claims"`
	Done    int    `json:"done"`
	Failed  int    `json:"failed"`
	Corrupt int    `json:"corrupt"`
	Bytes   int    `json:"bytes"`
	MinSeq  uint64 `json:"min_seq"`
	MaxSeq  uint64 `json:"max_seq"`
	Floor   uint64 `json:"floor"`
	// Compactable counts done records at or below the floor.
	Compactable int `json:"compactable"`
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
		} else if len(k) > len(floorPrefix) && k[:len(floorPrefix)] == floorPrefix {
			add(k[len(floorPrefix):])
		}
		return nil
	}, jetstream.MetaOnly())
	return out, err
}

// Stats summarises scope's records; an unknown scope is an error wrapping
// jsutil.ErrNotFound.
func (s *Store) Stats(ctx context.Context, scope string) (ScopeStats, error) {
	st := ScopeStats{Scope: ScopeDisplay(scope)}
	floor, frev, err := s.Floor(ctx, scope)
	if err != nil {
		return st, err
	}
	st.Floor = floor
	err = s.scanRecords(ctx, scope, func(r Record) error {
		st.Records++
		st.Bytes += r.Size
		switch r.State {
		case StateClaim:
			st.Claims++
		case StateDone:
			st.Done++
			if r.Seq <= floor {
				st.Compactable++
			}
		case StateFailed:
			st.Failed++
		}
		if st.MinSeq == 0 || r.Seq < st.MinSeq {
			st.MinSeq = r.Seq
		}
		st.MaxSeq = max(st.MaxSeq, r.Seq)
		return nil
	}, func(error) { st.Corrupt++; st.Records++ })
	if err != nil {
		return st, err
	}
	if st.Records == 0 && frev == 0 {
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
	_, frev, err := s.Floor(ctx, scope)
	if err != nil || frev != 0 {
		return err
	}
	found := false
	errStop := errors.New("stop")
	err = s.scan(ctx, recordPrefix+scope+".*", func(jetstream.KeyValueEntry) error { found = true; return errStop }, jetstream.MetaOnly())
	if err != nil && !errors.Is(err, errStop) {
		return err
	}
	if !found {
		return s.unknownScope(scope)
	}
	return nil
}

func (s *Store) unknownScope(scope string) error {
	return jsutil.Errorf(jsutil.ErrNotFound, "scope %q has no ack records in bucket %q", ScopeDisplay(scope), s.bucket)
}
