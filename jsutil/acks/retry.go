package acks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// storedMsg is a message read from its stream by sequence rather than
// delivered by a consumer (Retry, dead-letter sweeps): acks, naks and
// terminates do nothing.
type storedMsg struct {
	raw  *jetstream.RawStreamMsg
	meta jetstream.MsgMetadata
}

func (m *storedMsg) Metadata() (*jetstream.MsgMetadata, error) { md := m.meta; return &md, nil }
func (m *storedMsg) Data() []byte                              { return m.raw.Data }
func (m *storedMsg) Headers() nats.Header                      { return m.raw.Header }
func (m *storedMsg) Subject() string                           { return m.raw.Subject }
func (m *storedMsg) Reply() string                             { return "" }
func (m *storedMsg) Ack() error                                { return nil }
func (m *storedMsg) DoubleAck(context.Context) error           { return nil }
func (m *storedMsg) Nak() error                                { return nil }
func (m *storedMsg) NakWithDelay(time.Duration) error          { return nil }
func (m *storedMsg) InProgress() error                         { return nil }
func (m *storedMsg) Term() error                               { return nil }
func (m *storedMsg) TermWithReason(string) error               { return nil }

// storedRef names a message to read from its stream and the record it
// belongs to.
type storedRef struct {
	stream, consumer, scope, kvKey string
	seq, deliveries                uint64
	key, spec                      string
	kind                           KeyKind
	retry                          bool
}

// storedJob reads ref's message from its stream and makes a job of it. A
// message the stream no longer holds is an error wrapping
// jsutil.ErrNotFound, with a job (without payload) that can still be
// recorded.
func (s *Store) storedJob(ctx context.Context, ref storedRef) (*job, error) {
	d := Delivery{Stream: ref.stream, Consumer: ref.consumer, Seq: ref.seq, Deliveries: ref.deliveries, Scope: ref.scope,
		Key: ref.key, KeyFrom: ref.kind, KeySpec: ref.spec, Idempotent: true, Retry: ref.retry}
	raw := &jetstream.RawStreamMsg{Sequence: ref.seq, Header: nats.Header{}}
	var err error
	st, serr := s.js.Stream(ctx, ref.stream)
	if serr == nil {
		var got *jetstream.RawStreamMsg
		if got, serr = st.GetMsg(ctx, ref.seq); serr == nil {
			raw = got
		}
	}
	if serr != nil {
		err = jsutil.Wrap(serr, "get message %d of stream %q", ref.seq, ref.stream)
		if errors.Is(serr, jetstream.ErrMsgNotFound) {
			err = jsutil.Errorf(jsutil.ErrNotFound, "message %d is no longer in stream %q", ref.seq, ref.stream)
		}
	}
	d.Subject, d.Time = raw.Subject, raw.Time
	msg := &storedMsg{raw: raw, meta: jetstream.MsgMetadata{Sequence: jetstream.SequencePair{Stream: ref.seq},
		NumDelivered: ref.deliveries, Timestamp: raw.Time, Stream: ref.stream, Consumer: ref.consumer}}
	d.Msg = msg
	j := &job{msg: msg, d: d, kvKey: ref.kvKey, hash: PayloadHash(raw.Data), got: time.Now(), retry: ref.retry}
	j.res = Result{Stream: d.Stream, Consumer: d.Consumer, Seq: d.Seq, Subject: d.Subject, Time: d.Time, Deliveries: d.Deliveries,
		Scope: d.Scope, Key: d.Key, KeyFrom: d.KeyFrom, KeySpec: d.KeySpec, Idempotent: true}
	if err != nil {
		j.res.Action, j.res.Err = Failed, err
	}
	return j, err
}

// noFloor covers nothing: Retry runs a message whatever the floors say.
type noFloor struct{}

func (noFloor) covered(context.Context, *job) (bool, string, error) { return false, "", nil }

// Retry runs handler once more on the messages of failed records of
// stream: each message is read from the stream by its sequence and goes
// through the claim → done protocol under its record's key. The claim takes
// the failed record over (a dead-lettered one too); success makes it done; a
// failure keeps a final failed record with the reason (and, with
// WithDeadLetter, dead-letters the message again under a new ID). A record
// no longer failed when it is claimed is not run: a done one is a Duplicate,
// a claimed one Busy. A record whose dead letter is pending, or whose
// message the stream no longer holds, is Failed without running; so is a
// sequence-keyed record of an earlier stream of the name (Result.Stale
// says so; it proves nothing about this stream's message of its sequence,
// and is left as it is). Deliveries carry Retry; acks, naks and terminates do nothing. When ctx
// is cancelled, no other handler starts; a running one may finish within
// WithDrainTimeout (default: the lease), after which its context is
// cancelled with ErrStopped and, if it fails, it is Released (its failed
// record written back as it was). The results cover the messages handled.
func (s *Store) Retry(ctx context.Context, stream string, recs []Record, handler Handler, opts ...ProcessOption) ([]Result, error) {
	return s.retry(ctx, stream, recs, 1, func(ctx context.Context, ds []Delivery) ([]error, error) {
		return nil, handler(ctx, ds[0])
	}, opts)
}

// RetryBatch is Retry with a batch handler taking up to size messages at
// once (every message of a batch is claimed before it runs, as in
// ConsumeBatch).
func (s *Store) RetryBatch(ctx context.Context, stream string, recs []Record, handler BatchHandler, size int, opts ...ProcessOption) ([]Result, error) {
	if size < 1 {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "batch size %d: want at least 1", size)
	}
	return s.retry(ctx, stream, recs, size, handler, opts)
}

func (s *Store) retry(ctx context.Context, stream string, recs []Record, size int, h BatchHandler, opts []ProcessOption) ([]Result, error) {
	var c processConfig
	for _, o := range opts {
		o.applyProcess(&c)
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	if err := s.checkLease(c.lease); err != nil {
		return nil, err
	}
	// A failed record of an earlier stream of the name was made for
	// another message than this stream's of its sequence: it is not run
	// (retryJob), whatever the caller judged.
	recs = slices.Clone(recs)
	s.JudgeRecords(ctx, stream, recs)
	ls := s.newLeases(c.lease)
	defer ls.close()
	out := make([]Result, 0, len(recs))
	// When ctx is cancelled, a running handler may finish for the drain
	// timeout (WithDrainTimeout, default the lease), then its context is
	// cancelled with ErrStopped and, if it fails, it is released (its failed
	// record written back as it was); the next one does not start.
	work, cancelWork := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelWork(nil)
	drain := c.drain
	if drain == 0 {
		drain = c.lease
	}
	stopDrain := stopAfter(ctx, drain, cancelWork)
	defer stopDrain()
	for start := 0; start < len(recs) && ctx.Err() == nil; start += size {
		var batch, run []*job
		for _, r := range recs[start:min(start+size, len(recs))] {
			j, ok := s.retryJob(work, stream, r, &c)
			batch = append(batch, j)
			if ok {
				run = append(run, j)
			}
		}
		if len(run) > 0 {
			s.runJobs(work, &c, ls, run, h)
		}
		for _, j := range batch {
			j.res.Duration = time.Since(j.got)
			j.res.Retry = 0
			out = append(out, j.res)
		}
	}
	return out, nil
}

// retryJob reads r's message and claims its record; run says whether the
// handler runs (otherwise j.res says why not).
func (s *Store) retryJob(ctx context.Context, stream string, r Record, c *processConfig) (*job, bool) {
	j, err := s.storedJob(ctx, storedRef{stream: stream, scope: r.Scope, kvKey: r.KVKey, seq: r.Seq, deliveries: r.Deliveries,
		key: r.Key, spec: r.KeySpec, kind: r.KeyFrom, retry: true})
	if err != nil {
		return j, false
	}
	if r.Stale != "" {
		j.res.Action, j.res.Stale, j.res.CannotRun = Failed, r.Stale, true
		j.res.Err = jsutil.Errorf(jsutil.ErrConflict, "%s: not retried", r.Stale)
		return j, false
	}
	if dl := r.DeadLetter; dl != nil && dl.Pending {
		if deadLetterProblem(dl.Subject, c.deadLetter) == "" {
			j.res.Action = Failed
			j.res.Err = jsutil.Errorf(jsutil.ErrConflict, "the dead letter of message %d is pending: a run of jsctl consume on the scope publishes it first", r.Seq)
			return j, false
		}
		// It names a subject this retry does not publish to: it is not
		// published; the message runs again (a failure dead-letters it
		// to this retry's --dead-letter, if any).
		j.res.DeadLetterRefused = fmt.Sprintf("ack record %q %s: its pending dead letter is not published; the message runs again", r.KVKey, deadLetterProblem(dl.Subject, c.deadLetter))
	}
	if r.Scope != "" && j.kvKey == "" {
		j.kvKey = recordKey(r.Scope, r.KeyFrom, r.Key)
	}
	dup, err := s.claimRecord(ctx, j, c.lease)
	if dup != nil && dup.Seq != r.Seq && dup.State != StateClaim {
		// The key now holds another message's record.
		j.res.Action = Failed
		j.res.Err = jsutil.Errorf(jsutil.ErrConflict, "ack record %q is now for message %d, not %d", j.kvKey, dup.Seq, r.Seq)
		return j, false
	}
	if !s.admitClaimed(ctx, j, c, noFloor{}, dup, err) {
		if j.res.Action == "" {
			j.res.Action = Failed
		}
		return j, false
	}
	return j, true
}

// runJobs runs a batch handler on claimed jobs and finishes each one
// synchronously.
func (s *Store) runJobs(ctx context.Context, c *processConfig, ls *leases, run []*job, h BatchHandler) {
	ds := make([]Delivery, len(run))
	for i, j := range run {
		ds[i] = j.d
	}
	hctx, set := ls.hold(ctx, run)
	results, err := h(hctx, ds)
	stopped := stoppedBy(hctx)
	ls.release(set)
	if err == nil && results != nil && len(results) != len(ds) {
		err = fmt.Errorf("batch handler returned %d results for %d messages", len(results), len(ds))
		results = nil
	}
	for i, j := range run {
		herr := err
		if herr == nil && results != nil {
			herr = results[i]
		}
		switch {
		case j.res.LeaseLost:
			s.leaseLost(j, c)
		case stopped && herr != nil:
			s.released(ctx, j, c, herr)
		case herr != nil:
			s.handlerFailed(ctx, j, c, herr)
		default:
			s.finishDone(ctx, j, c)
		}
	}
}

// ScopeStream finds the stream whose messages scope's records were made
// for: the stream of its consumers' floors, else the stream named by the
// scope's first part (a default scope is STREAM.CONSUMER).
func (s *Store) ScopeStream(ctx context.Context, scope string) (string, error) {
	floors, err := s.Floors(ctx, scope)
	if err != nil {
		return "", err
	}
	seen := map[string]bool{}
	for _, f := range floors {
		if f.Stream != "" {
			seen[f.Stream] = true
		}
	}
	var names []string
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	switch {
	case len(names) == 1:
		return names[0], nil
	case len(names) > 1:
		return "", jsutil.Errorf(jsutil.ErrBadInput, "scope %q has consumers of several streams (%s): name the stream", ScopeDisplay(scope), strings.Join(names, ", "))
	}
	first, _, _ := strings.Cut(scope, ".")
	if name, err := jsutil.KeyTokenDecode(first); err == nil {
		if _, err := s.js.Stream(ctx, name); err == nil {
			return name, nil
		}
	}
	return "", jsutil.Errorf(jsutil.ErrNotFound, "cannot tell the stream of scope %q (no consumer floor, and no stream %q): name the stream", ScopeDisplay(scope), first)
}

// FindRecord finds the record of key in scope, trying each kind of value
// key and then (for a number) the sequence key; a key of no record is an
// error wrapping jsutil.ErrNotFound.
func (s *Store) FindRecord(ctx context.Context, scope, key string) (Record, error) {
	for _, kind := range KeyKinds {
		r, err := s.Get(ctx, scope, kind, key)
		if !errors.Is(err, jsutil.ErrNotFound) {
			return r, err
		}
	}
	if _, err := strconv.ParseUint(key, 10, 64); err == nil {
		return s.Get(ctx, scope, KeyFromSequence, key)
	}
	return Record{}, jsutil.Errorf(jsutil.ErrNotFound, "no ack record for key %q in scope %q of bucket %q", key, ScopeDisplay(scope), s.bucket)
}
