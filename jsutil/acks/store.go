package acks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Bucket defaults.
const (
	// DefaultBucket is the KV bucket that holds ack records.
	DefaultBucket = "JSCTL_ACKS"
	// DefaultRetention is how long done and failed records are kept: each
	// is written with this per-record TTL (Nats-TTL), unless WithRetention.
	DefaultRetention = 7 * 24 * time.Hour
	// DefaultMarkerTTL is how long the bucket keeps the markers left by an
	// expired lease or a released record (the bucket's LimitMarkerTTL).
	DefaultMarkerTTL = time.Minute
)

// ttlNever marks a write that must outlive any max age of the bucket
// (floor records): the server's "Nats-TTL: never".
const ttlNever time.Duration = -1

// Store is an open ack-record bucket.
type Store struct {
	js        jetstream.JetStream
	kv        jetstream.KeyValue
	bucket    string
	subject   string // "$KV.<bucket>." : records are written here directly, with TTL and CAS headers
	markerTTL time.Duration
	worker    string
	// retention is the per-record TTL of done and failed records; maxAge
	// is the bucket's own max age (0: none), which caps it.
	retention time.Duration
	maxAge    time.Duration
	replicas  int
	// created is when the bucket's stream was created: it tells this
	// incarnation of the bucket from an earlier one of the same name.
	created time.Time
	// sendDone, when set (by tests), sends Consume's done writes in place
	// of the connection.
	sendDone func(*nats.Msg) error
}

// Option configures Open.
type Option func(*openConfig)

type openConfig struct {
	bucket    string
	retention time.Duration
	markerTTL time.Duration
	replicas  int
	storage   jetstream.StorageType
	worker    string
}

// WithBucket names the bucket (default DefaultBucket).
func WithBucket(name string) Option { return func(c *openConfig) { c.bucket = name } }

// WithRetention sets how long done and failed records are kept (default
// DefaultRetention, at least 1s): every such record is written with this
// per-record TTL, so the server removes it then. A bucket with a max age of
// its own (made by earlier versions) removes records at that age if it is
// shorter.
func WithRetention(d time.Duration) Option { return func(c *openConfig) { c.retention = d } }

// WithMarkerTTL sets how long lease-expiry and release markers are kept
// when Open creates the bucket (default DefaultMarkerTTL, at least 1s).
func WithMarkerTTL(d time.Duration) Option { return func(c *openConfig) { c.markerTTL = d } }

// WithReplicas sets the bucket's replicas when Open creates it (default 1;
// jsctl consume passes the stream's own replica count).
func WithReplicas(n int) Option { return func(c *openConfig) { c.replicas = n } }

// WithStorage sets the bucket's storage when Open creates it (default file).
func WithStorage(st jetstream.StorageType) Option { return func(c *openConfig) { c.storage = st } }

// WithWorker names this process in the records it writes (default
// host:pid).
func WithWorker(name string) Option { return func(c *openConfig) { c.worker = name } }

// openTimeout bounds each request of Open; one left unanswered is sent
// again for up to jsutil.RetryFor(ctx) (or until ctx ends).
const openTimeout = 5 * time.Second

// Open opens the ack-record bucket, creating it on first use with history
// 1, limit markers (which enable per-record TTLs) and no max age: every
// record carries its own TTL (a claim its lease, done and failed records the
// retention; floors never expire). An existing bucket with incompatible
// settings is refused (nothing in it is changed). A request left
// unanswered is sent again for up to 30s, or until ctx ends (see
// jsutil.OpenKV).
func Open(ctx context.Context, js jetstream.JetStream, opts ...Option) (*Store, error) {
	c := openConfig{bucket: DefaultBucket, retention: DefaultRetention, markerTTL: DefaultMarkerTTL, replicas: 1, storage: jetstream.FileStorage}
	for _, o := range opts {
		o(&c)
	}
	if err := checkBucket(c.bucket); err != nil {
		return nil, err
	}
	if c.markerTTL < time.Second {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "ack bucket %q: marker TTL %v is below the server's minimum of 1s", c.bucket, c.markerTTL)
	}
	if c.retention < time.Second || c.retention%time.Second != 0 {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "ack bucket %q: retention %v: want whole seconds, at least 1s (the server counts TTLs in seconds)", c.bucket, c.retention)
	}
	if c.replicas < 1 || c.replicas > 5 {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "ack bucket %q: replicas %d: want 1 to 5", c.bucket, c.replicas)
	}
	kv, err := jsutil.OpenKV(ctx, js, jetstream.KeyValueConfig{
		Bucket:         c.bucket,
		Description:    "jsctl ack records (idempotent processing)",
		History:        1,
		LimitMarkerTTL: c.markerTTL,
		Replicas:       c.replicas,
		Storage:        c.storage,
	}, true, openTimeout, jsutil.RetryFor(ctx))
	if err != nil {
		return nil, openErr(err, c.bucket)
	}
	return newStore(ctx, js, kv, c)
}

// checkBucket refuses a name that cannot name a bucket, before any request
// (one too long for the server's protocol line would cost the connection).
func checkBucket(name string) error {
	if jsutil.BucketNameOK(name) {
		return nil
	}
	q, cut := jsutil.Escape([]byte(name), 40)
	if cut {
		q += fmt.Sprintf("... (%d bytes)", len(name))
	}
	return jsutil.Errorf(jsutil.ErrBadInput, "ack bucket %s: a bucket name is 1 to %d letters, digits, \"-\" or \"_\"", q, jsutil.MaxBucketLen)
}

// OpenExisting opens an ack-record bucket that must already exist; a missing
// bucket is an error wrapping jsutil.ErrNotFound.
func OpenExisting(ctx context.Context, js jetstream.JetStream, bucket string) (*Store, error) {
	if err := checkBucket(bucket); err != nil {
		return nil, err
	}
	kv, err := jsutil.OpenExistingKV(ctx, js, bucket)
	if err != nil {
		return nil, openErr(err, bucket)
	}
	return newStore(ctx, js, kv, openConfig{bucket: bucket, retention: DefaultRetention})
}

func openErr(err error, bucket string) error {
	if errors.Is(err, jetstream.ErrInvalidBucketName) {
		return jsutil.Errorf(jsutil.ErrBadInput, "ack bucket %q: invalid bucket name", bucket)
	}
	if errors.Is(err, jetstream.ErrLimitMarkerTTLNotSupported) {
		return jsutil.Errorf(jsutil.ErrBadInput, "ack bucket %q: the server does not support limit markers (needs nats-server 2.11 or later)", bucket)
	}
	return jsutil.Wrap(err, "open ack bucket %q", bucket)
}

// newStore checks that the bucket can hold ack records: one value per key
// (history 1) and per-message TTLs with limit markers (for leases).
func newStore(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, c openConfig) (*Store, error) {
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, jsutil.Wrap(err, "read ack bucket %q", c.bucket)
	}
	if h := st.History(); h != 1 {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "bucket %q keeps history %d: ack records need a bucket with history 1 (choose another --bucket)", c.bucket, h)
	}
	kst, ok := st.(*jetstream.KeyValueBucketStatus)
	if st.LimitMarkerTTL() <= 0 || (ok && !kst.StreamInfo().Config.AllowMsgTTL) {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "bucket %q has no limit markers (per-key TTL): ack records need them for leases (choose another --bucket)", c.bucket)
	}
	if c.worker == "" {
		host, _ := os.Hostname()
		c.worker = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	replicas := 1
	var created time.Time
	if ok {
		replicas, created = kst.StreamInfo().Config.Replicas, kst.StreamInfo().Created
	}
	return &Store{
		js: js, kv: kv, bucket: c.bucket, subject: kvPutPrefix(js, c.bucket),
		markerTTL: st.LimitMarkerTTL(), worker: c.worker,
		retention: c.retention, maxAge: st.TTL(), replicas: replicas, created: created,
	}, nil
}

// Retention is how long done and failed records written by this store are
// kept: the per-record TTL, capped by the bucket's max age if it has one.
func (s *Store) Retention() time.Duration {
	if s.maxAge > 0 && s.maxAge < s.retention {
		return s.maxAge
	}
	return s.retention
}

// Replicas is the bucket's replica count.
func (s *Store) Replicas() int { return s.replicas }

// kvPutPrefix is the subject prefix kv.Put and kv.Create publish to: the
// bucket's "$KV.<bucket>." behind the JetStream API prefix when a domain or
// a non-default prefix is in use (as nats.go's kv does).
func kvPutPrefix(js jetstream.JetStream, bucket string) string {
	o := js.Options()
	prefix := ""
	switch {
	case o.Domain != "":
		prefix = "$JS." + o.Domain + ".API."
	case o.APIPrefix != "" && o.APIPrefix != jetstream.DefaultAPIPrefix && o.APIPrefix+"." != jetstream.DefaultAPIPrefix:
		prefix = o.APIPrefix
		if !strings.HasSuffix(prefix, ".") {
			prefix += "."
		}
	}
	return prefix + "$KV." + bucket + "."
}

// Bucket is the bucket's name.
func (s *Store) Bucket() string { return s.bucket }

// KV is the underlying bucket.
func (s *Store) KV() jetstream.KeyValue { return s.kv }

// Get returns the record of the dedup key key (of kind kind) in scope.
func (s *Store) Get(ctx context.Context, scope string, kind KeyKind, key string) (Record, error) {
	if err := CheckScope(scope); err != nil {
		return Record{}, err
	}
	r, err := s.getKV(ctx, recordKey(scope, kind, key))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return r, jsutil.Errorf(jsutil.ErrNotFound, "no ack record for key %q in scope %q of bucket %q", key, ScopeDisplay(scope), s.bucket)
	}
	if err == nil {
		one := []Record{r}
		s.judge(ctx, one)
		r = one[0]
	}
	return r, err
}

// getKV reads one record by its KV key from the bucket's leader; a missing
// or deleted key returns an error wrapping jetstream.ErrKeyNotFound.
func (s *Store) getKV(ctx context.Context, kvKey string) (Record, error) {
	e, err := s.leaderGet(ctx, kvKey)
	if isNotFound(err) {
		return Record{}, fmt.Errorf("ack record %q: %w", kvKey, jetstream.ErrKeyNotFound)
	}
	if err != nil {
		return Record{}, fmt.Errorf("get ack record: %w", err)
	}
	return s.valueRecord(kvKey, e.value, e.rev, e.created)
}

func (s *Store) entryRecord(e jetstream.KeyValueEntry) (Record, error) {
	return s.valueRecord(e.Key(), e.Value(), e.Revision(), e.Created())
}

// valueRecord decodes the value of record key kvKey at revision rev.
func (s *Store) valueRecord(kvKey string, val []byte, rev uint64, created time.Time) (Record, error) {
	scope, kind, key, ok := parseRecordKey(kvKey)
	if !ok {
		return Record{}, jsutil.Errorf(jsutil.ErrBadInput, "key %q in bucket %q is not an ack record key", kvKey, s.bucket)
	}
	v, err := decodeValue(s.bucket, kvKey, val)
	if err != nil {
		return Record{}, err
	}
	r := v.record(scope, kind, key, kvKey, rev, created, len(val))
	if s.maxAge > 0 && r.Retention > s.maxAge {
		r.Expires = created.Add(s.maxAge)
	}
	return r, nil
}

// scan calls fn for every live entry whose key matches filter (a KV key
// filter with wildcards), in bucket order.
func (s *Store) scan(ctx context.Context, filter string, fn func(jetstream.KeyValueEntry) error, opts ...jetstream.WatchOpt) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, stop, err := jsutil.WatchKV(ctx, s.kv, s.js.Options().DefaultTimeout, filter, append(opts, jetstream.IgnoreDeletes())...)
	if err != nil {
		return jsutil.Wrap(err, "read ack bucket %q", s.bucket)
	}
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return jsutil.Wrap(ctx.Err(), "read ack bucket %q", s.bucket)
		case e, ok := <-w.Updates():
			if !ok {
				return jsutil.Errorf(jsutil.ErrConnection, "read ack bucket %q: watch ended early", s.bucket)
			}
			if e == nil {
				return nil
			}
			if e.Operation() != jetstream.KeyValuePut {
				continue
			}
			if err := fn(e); err != nil {
				return err
			}
		}
	}
}

// scanRecords calls fn for every record of scope ("" for all scopes).
// Corrupt records are passed to bad (and skipped) when bad is not nil, and
// stop the scan otherwise.
func (s *Store) scanRecords(ctx context.Context, scope string, fn func(Record) error, bad func(error)) error {
	filter := recordPrefix + ">"
	if scope != "" {
		if err := CheckScope(scope); err != nil {
			return err
		}
		filter = recordPrefix + scope + ".*"
	}
	return s.scan(ctx, filter, func(e jetstream.KeyValueEntry) error {
		r, err := s.entryRecord(e)
		if err != nil {
			err = &CorruptRecord{Record: corruptRecord(e), Err: err}
			if bad == nil {
				return err
			}
			bad(err)
			return nil
		}
		return fn(r)
	})
}

// CorruptRecord is a record that does not read (written by hand, or by
// something else than jsctl): the error of a scan that meets it, and what
// is known of it, so that it can be reported by key and forgotten
// (Forget). Record.Corrupt says why; its Seq is the one its key names (a
// sequence key), 0 otherwise.
type CorruptRecord struct {
	Record Record
	Err    error
}

func (e *CorruptRecord) Error() string { return e.Err.Error() }
func (e *CorruptRecord) Unwrap() error { return e.Err }

// corruptRecord is what is known of the unreadable record e.
func corruptRecord(e jetstream.KeyValueEntry) Record {
	r := Record{KVKey: e.Key(), Revision: e.Revision(), Time: e.Created(), Size: len(e.Value())}
	if scope, kind, key, ok := parseRecordKey(e.Key()); ok {
		r.Scope, r.KeyFrom, r.Key = scope, kind, key
		if kind == KeyFromSequence {
			r.Seq, _ = strconv.ParseUint(key, 10, 64)
		}
	}
	return r
}

// Filter selects records for List. Zero fields select everything.
type Filter struct {
	Scope          string // a scope (see DefaultScope, ScopeName); "" for all
	State          State
	FromSeq, ToSeq uint64    // stream sequence range, inclusive; 0 = open
	Since, Until   time.Time // record time range, inclusive
	// SkipCorrupt is given each record that does not read (a
	// *CorruptRecord), which is then skipped; without it such a record
	// ends the scan with its error.
	SkipCorrupt func(error)
	// Corrupt selects the records that do not read instead (Record.Corrupt
	// says why; FromSeq and ToSeq select those whose sequence key is in
	// the range, the other filters none).
	Corrupt bool
}

func (f Filter) match(r Record) bool {
	switch {
	case f.State != "" && r.State != f.State,
		f.FromSeq != 0 && r.Seq < f.FromSeq,
		f.ToSeq != 0 && r.Seq > f.ToSeq,
		!f.Since.IsZero() && r.Time.Before(f.Since),
		!f.Until.IsZero() && r.Time.After(f.Until):
		return false
	}
	return true
}

// matchCorrupt reports whether f (with Corrupt) selects the unreadable
// record r: its sequence key in the range, when one is given.
func (f Filter) matchCorrupt(r Record) bool {
	if f.FromSeq == 0 && f.ToSeq == 0 {
		return true
	}
	return r.Seq != 0 && (f.FromSeq == 0 || r.Seq >= f.FromSeq) && (f.ToSeq == 0 || r.Seq <= f.ToSeq)
}

// List returns the records that f selects, in bucket order. Sequence-keyed
// records of another incarnation of their stream say so (Record.Stale).
func (s *Store) List(ctx context.Context, f Filter) ([]Record, error) {
	var out []Record
	if f.Corrupt {
		err := s.scanRecords(ctx, f.Scope, func(Record) error { return nil }, func(err error) {
			var ce *CorruptRecord
			if errors.As(err, &ce) && f.matchCorrupt(ce.Record) {
				ce.Record.Corrupt = err.Error()
				out = append(out, ce.Record)
			}
		})
		return out, err
	}
	err := s.scanRecords(ctx, f.Scope, func(r Record) error {
		if f.match(r) {
			out = append(out, r)
		}
		return nil
	}, f.SkipCorrupt)
	if err == nil {
		s.judge(ctx, out)
	}
	return out, err
}

// CountRange counts the records of scope whose stream sequence is in
// [from, to] (any state). An unknown scope has none.
func (s *Store) CountRange(ctx context.Context, scope string, from, to uint64) (int, error) {
	if err := CheckScope(scope); err != nil {
		return 0, err
	}
	recs, err := s.List(ctx, Filter{Scope: scope, FromSeq: from, ToSeq: to})
	if err != nil {
		return 0, fmt.Errorf("count ack records of scope %q: %w", ScopeDisplay(scope), err)
	}
	return len(recs), nil
}

// ForgetRange deletes the records of scope whose stream sequence is in
// [from, to], each with a compare-and-set on its revision, and lowers every
// floor of the scope below from (LowerFloors), so the messages are handled
// again when redelivered. It returns how many records it deleted.
func (s *Store) ForgetRange(ctx context.Context, scope string, from, to uint64) (int, error) {
	if err := CheckScope(scope); err != nil {
		return 0, err
	}
	// A record that does not read is left as it is (acks forget --corrupt
	// removes it when asked): its message, if it is in the range, fails
	// as its record does until then.
	recs, err := s.List(ctx, Filter{Scope: scope, FromSeq: from, ToSeq: to, SkipCorrupt: func(error) {}})
	if err != nil {
		return 0, fmt.Errorf("forget ack records of scope %q: %w", ScopeDisplay(scope), err)
	}
	// A range of sequences is a range of this stream's messages: records
	// of an earlier stream of the name are not in it (Forget removes them
	// when named).
	recs = slices.DeleteFunc(recs, func(r Record) bool { return r.Stale != "" })
	n, err := s.forget(ctx, recs)
	if err != nil {
		return n, err
	}
	if err := s.LowerFloors(ctx, scope, max(from, 1)); err != nil {
		return n, err
	}
	return n, nil
}

// Forget deletes the given records, each with a compare-and-set on its
// revision. A record that changed since it was read is read again and
// deleted if it is still for the same message. It returns how many it
// deleted.
func (s *Store) Forget(ctx context.Context, recs []Record) (int, error) {
	return s.forget(ctx, recs)
}

func (s *Store) forget(ctx context.Context, recs []Record) (int, error) {
	watches := s.watchesOf(ctx, recs)
	n := 0
	for _, r := range recs {
		if wk := watchKey(r.KVKey); watches[wk] {
			// A forgotten message runs again when redelivered: its
			// dead-letter watch must not make a sweep dead-letter it.
			_ = s.kv.Purge(ctx, wk, jetstream.PurgeTTL(s.markerTTL))
		}
		rev := r.Revision
		for attempt := 0; ; attempt++ {
			err := s.purge(ctx, r.KVKey, rev)
			if err == nil {
				n++
				break
			}
			if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) || attempt == 3 {
				return n, jsutil.Wrap(err, "forget ack record %q in bucket %q", r.KVKey, s.bucket)
			}
			cur, gerr := s.getKV(ctx, r.KVKey)
			if r.Corrupt != "" || errors.Is(gerr, jetstream.ErrKeyNotFound) || (gerr == nil && cur.Seq != r.Seq) {
				break // gone, or now made for another message: not ours to forget
			}
			if gerr != nil {
				return n, gerr
			}
			rev = cur.Revision
		}
	}
	return n, nil
}

// watchesOf lists the dead-letter watches of the scopes of recs (there are
// few: one per message on its last delivery with a dead-letter subject).
func (s *Store) watchesOf(ctx context.Context, recs []Record) map[string]bool {
	out := map[string]bool{}
	scopes := map[string]bool{}
	for _, r := range recs {
		if r.Scope != "" && !scopes[r.Scope] {
			scopes[r.Scope] = true
			_ = s.scan(ctx, watchPrefix+r.Scope+".*", func(e jetstream.KeyValueEntry) error {
				out[e.Key()] = true
				return nil
			}, jetstream.MetaOnly())
		}
	}
	return out
}

// purge deletes kvKey if its revision is still rev; the marker it leaves
// expires after the bucket's marker TTL.
func (s *Store) purge(ctx context.Context, kvKey string, rev uint64) error {
	return s.kv.Purge(ctx, kvKey, jetstream.LastRevision(rev), jetstream.PurgeTTL(s.markerTTL))
}

// kvMsg builds a write of val under kvKey that succeeds only if the key's
// last revision is still rev (0: the key has no message at all), with a
// per-record TTL when ttl is not 0 (ttlNever: never expires). kv.Update
// cannot set a TTL and kv.Create retries with extra requests, so records are
// written to the bucket's subject directly with the headers kv uses:
// Nats-Expected-Last-Subject-Sequence (the compare-and-set) and Nats-TTL.
func (s *Store) kvMsg(kvKey string, val []byte, rev uint64, ttl time.Duration) *nats.Msg {
	m := nats.NewMsg(s.subject + kvKey)
	m.Data = val
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(rev, 10))
	switch {
	case ttl == ttlNever:
		m.Header.Set(jetstream.MsgTTLHeader, "never")
	case ttl > 0:
		m.Header.Set(jetstream.MsgTTLHeader, ttl.String())
	}
	return m
}

// publish writes val under kvKey if the key's revision is still rev (see
// kvMsg) and returns the new revision. A lost compare-and-set wraps
// jetstream.ErrKeyRevisionMismatch.
func (s *Store) publish(ctx context.Context, kvKey string, val []byte, rev uint64, ttl time.Duration) (uint64, error) {
	ack, err := s.js.PublishMsg(ctx, s.kvMsg(kvKey, val, rev, ttl))
	if err != nil {
		return 0, casErr(err)
	}
	return ack.Sequence, nil
}

// casErr marks the server's "wrong last sequence" answer as a lost
// compare-and-set.
func casErr(err error) error {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		return fmt.Errorf("%w: %w", err, jetstream.ErrKeyRevisionMismatch)
	}
	return err
}
