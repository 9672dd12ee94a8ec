package reset

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// IntentBucket is the KV bucket of intent records: one key per consumer
// (HistoryKey: STREAM.CONSUMER, each name a jsutil.KeyToken), history 1,
// created on first use with the stream's replica count. A key holds a
// record while a change of that consumer is in progress and is deleted
// when the change is verified and recorded in history.
const IntentBucket = "JSCTL_RESET_INTENTS"

// Intent is written before the first destructive step of a change
// (delete, in-place reset): everything needed to finish or undo the change
// if the run that made it dies. It is created with compare-and-set, so two
// concurrent changes of one consumer conflict instead of racing.
type Intent struct {
	// ID identifies the change; its history record carries it too.
	ID       string `json:"id"`
	Stream   string `json:"stream"`
	Consumer string `json:"consumer"`
	Method   Method `json:"method"`
	Target   Target `json:"target"`
	// Config is the consumer's full configuration exactly as the server
	// returned it before the change (absent when the change creates a
	// consumer that did not exist).
	Config json.RawMessage `json:"config,omitempty"`
	// Created is when the server created the consumer the change started
	// from: a consumer with another creation time was made afterwards.
	Created *time.Time `json:"created,omitempty"`
	// StreamCreated is when the server created the stream (nil in records
	// of an older jsctl): recover leaves a stream created again since.
	StreamCreated *time.Time `json:"stream_created,omitempty"`
	// NewCreated is when the server created the consumer the change made
	// (written right after the create); Creating says a create was sent
	// whose consumer's creation time is not written yet. A consumer
	// created at neither Created nor NewCreated is someone else's.
	NewCreated *time.Time `json:"new_created,omitempty"`
	Creating   bool       `json:"creating,omitempty"`
	// From is the position before the change.
	From      From   `json:"from"`
	FromStart *Start `json:"from_start,omitempty"`
	// To is the target: the next delivery once the change is made.
	To        To         `json:"to"`
	StartTime *time.Time `json:"start_time,omitempty"`
	// NewConfig is the configuration a recreate (or create) creates the
	// consumer with.
	NewConfig json.RawMessage `json:"new_config,omitempty"`
	// MoveAfterCreate says the consumer created from NewConfig is then
	// moved to To.Sequence in place (NewConfig keeps its own start).
	MoveAfterCreate bool `json:"move_after_create,omitempty"`
	// UndoOf is the history revision a --to-previous change undoes.
	UndoOf uint64 `json:"undo_of,omitempty"`
	// Hold names the consumer that keeps interest in an interest stream's
	// messages while the consumer is recreated.
	Hold string `json:"hold,omitempty"`
	// Forget is the range of ack records the change forgets first.
	Forget *Forget `json:"forget_acks,omitempty"`
	// AcksBucket and AcksScope are the ack-record bucket and scope
	// (Options.AcksBucket, AcksScope; "" = the defaults) whose floor an
	// in-place move forward is noted in, by the change or by recover.
	AcksBucket string `json:"acks_bucket,omitempty"`
	AcksScope  string `json:"acks_scope,omitempty"`
	// Auto says the method was picked by --method auto: like the change,
	// recover then falls back to a recreate where the in-place reset
	// cannot be made (see executor.fallBack).
	Auto bool `json:"auto,omitempty"`
	// Pause is the pause the change sets (Options.Pause): the consumer
	// stays paused until the change is finished, then is resumed if
	// Pause.Resume.
	Pause *PauseIntent `json:"pause,omitempty"`
	Time  time.Time    `json:"time"`
	User  string       `json:"user"`
	Host  string       `json:"host"`
	// Reason is why the change is made (--reason).
	Reason string `json:"reason,omitempty"`
	// Claim names the `consumer recover` run that took the change over
	// (see intents.claim).
	Claim *Claim `json:"claim,omitempty"`

	revision uint64
}

// Claim is a recover run's hold on an unfinished change.
type Claim struct {
	ID   string    `json:"id"`
	Time time.Time `json:"time"`
	User string    `json:"user"`
	Host string    `json:"host"`
}

func (c *Claim) id() string {
	if c == nil {
		return ""
	}
	return c.ID
}

// Unfinished describes a change an interrupted run left unfinished.
type Unfinished struct {
	ChangeID string    `json:"change_id"`
	Stream   string    `json:"stream"`
	Consumer string    `json:"consumer"`
	Method   Method    `json:"method"`
	Started  time.Time `json:"started"`
	User     string    `json:"user"`
	Host     string    `json:"host"`
	To       To        `json:"to"`
	// Paused says the change paused the consumer (--pause): it stays
	// paused until the change is finished.
	Paused bool `json:"paused,omitempty"`
	// Command finishes it.
	Command string `json:"command"`
	// Stale, when set, says why the change no longer applies to the
	// consumer of the name as it is now (its stream or the consumer was
	// created again, or it was edited since): recover does not finish it.
	Stale string `json:"stale,omitempty"`
}

// String says it for people, naming the command that finishes it.
func (u Unfinished) String() string {
	paused := ""
	if u.Paused {
		paused = ", and it paused the consumer"
	}
	if u.Stale != "" {
		return fmt.Sprintf("consumer %q on %q: the record of an unfinished %s (change %s, started %s by %s@%s%s) does not apply to it: %s; recover will not finish it, and its plan says what it does: %s",
			u.Consumer, u.Stream, u.Method, esc(u.ChangeID), u.Started.UTC().Format(time.RFC3339), esc(u.User), esc(u.Host), paused, u.Stale, strings.TrimSuffix(u.Command, " --execute"))
	}
	return fmt.Sprintf("consumer %q on %q has an unfinished %s (change %s, started %s by %s@%s%s); finish it with: %s",
		u.Consumer, u.Stream, u.Method, esc(u.ChangeID), u.Started.UTC().Format(time.RFC3339), esc(u.User), esc(u.Host), paused, u.Command)
}

func (in *Intent) unfinished() Unfinished {
	return Unfinished{
		ChangeID: in.ID, Stream: in.Stream, Consumer: in.Consumer, Method: in.Method,
		Started: in.Time.UTC(), User: in.User, Host: in.Host, To: in.To, Paused: in.Pause != nil,
		Command: RecoverCommand(in.Stream, in.Consumer),
	}
}

// RecoverCommand is the command line that finishes a consumer's unfinished
// change.
func RecoverCommand(stream, consumer string) string {
	return "jsctl consumer recover " + shellWord(stream) + " " + shellWord(consumer) + " --execute"
}

// shellWord quotes s for a POSIX shell when it needs it.
func shellWord(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_=+,.:@%/", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// newID returns a random change id.
func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// intents is the intent bucket, opened (or created) on first use.
type intents struct {
	js       jetstream.JetStream
	bucket   string
	replicas int
	settle   time.Duration
	timeout  time.Duration // per request (requestTimeout when 0)

	// info is the stream's info when the planner read it (nil: list
	// reads it).
	info *jetstream.StreamInfo

	mu sync.Mutex
	kv jetstream.KeyValue
}

// ctx bounds one request.
func (s *intents) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, orRequestTimeout(s.timeout))
}

func (s *intents) open(ctx context.Context, create bool) (jetstream.KeyValue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kv != nil {
		return s.kv, nil
	}
	kv, err := jsutil.OpenKV(ctx, s.js, jetstream.KeyValueConfig{
		Bucket:      s.bucket,
		Description: "jsctl consumer changes in progress (consumer recover finishes them)",
		History:     1,
		Replicas:    max(s.replicas, 1),
	}, create, orRequestTimeout(s.timeout), s.settle)
	if err != nil {
		return nil, err
	}
	s.kv = kv
	return kv, nil
}

// begin writes the intent with compare-and-set (create). A record already
// there for the consumer is a conflict (another change is in progress or
// was left unfinished). A lost reply is retried; a retry that finds this
// very intent already written counts as written.
func (s *intents) begin(ctx context.Context, in *Intent) error {
	what := fmt.Sprintf("reset consumer %q on %q: write the intent record to %q (nothing changed)", in.Consumer, in.Stream, s.bucket)
	kv, err := s.open(ctx, true)
	if err != nil {
		return jsutil.Wrap(err, "%s", what)
	}
	val, err := json.Marshal(in)
	if err != nil {
		return err
	}
	key := HistoryKey(in.Stream, in.Consumer)
	rt := jsutil.RetryEvery(s.settle, 200*time.Millisecond)
	for {
		cctx, cancel := s.ctx(ctx)
		rev, err := kv.Create(cctx, key, val)
		cancel()
		if err == nil {
			in.revision = rev
			return nil
		}
		err = jsutil.RequestError(s.js.Conn(), kvSubject(s.js, s.bucket, key), err)
		if errors.Is(err, jetstream.ErrKeyExists) {
			cur, gerr := s.get(ctx, kv, key)
			if gerr == nil && cur != nil && cur.ID == in.ID {
				in.revision = cur.revision // our own write, its reply lost
				return nil
			}
			if gerr == nil && cur != nil {
				return jsutil.Errorf(jsutil.ErrConflict, "reset consumer %q on %q: another change is in progress or unfinished (change %s, %s by %s@%s, started %s); if no other jsctl is changing it, finish that change with: %s",
					in.Consumer, in.Stream, esc(cur.ID), esc(string(cur.Method)), esc(cur.User), esc(cur.Host), cur.Time.UTC().Format(time.RFC3339), RecoverCommand(in.Stream, in.Consumer))
			}
			if gerr != nil && !lost(gerr) {
				return jsutil.Wrap(gerr, "%s", what)
			}
			// Deleted meanwhile, or unreadable for now: try again.
		} else if !lost(err) || ctx.Err() != nil || rt.Expired() {
			return jsutil.Wrap(err, "%s", what)
		}
		if !rt.Again(ctx, err) || rt.Expired() {
			return jsutil.Wrap(err, "%s", what)
		}
	}
}

// update rewrites an intent this run holds (compare-and-set on its
// revision), as when the method changes from reset to recreate.
func (s *intents) update(ctx context.Context, in *Intent) error {
	kv, err := s.open(ctx, true)
	if err != nil {
		return err
	}
	val, err := json.Marshal(in)
	if err != nil {
		return err
	}
	_, err = s.rewrite(ctx, kv, in, val, fmt.Sprintf("reset consumer %q on %q: update the intent record", in.Consumer, in.Stream),
		func(cur *Intent) (bool, bool) {
			return cur != nil && cur.ID == in.ID && cur.Method == in.Method && cur.Claim.id() == in.Claim.id(), false
		})
	return err
}

// rewrite writes val over the intent's revision (compare-and-set), sending
// it again within Settle while the server does not answer. After a failed
// attempt readBack gets the record as it is (nil: gone) and says whether
// the write is known to have landed (its answer was lost) or to have lost
// to another writer; it returns whether the write landed, with
// in.revision updated.
func (s *intents) rewrite(ctx context.Context, kv jetstream.KeyValue, in *Intent, val []byte, what string,
	readBack func(cur *Intent) (landed, beaten bool)) (bool, error) {
	key := HistoryKey(in.Stream, in.Consumer)
	rt := jsutil.RetryEvery(s.settle, 200*time.Millisecond)
	for {
		uctx, cancel := s.ctx(ctx)
		rev, err := kv.Update(uctx, key, val, in.revision)
		cancel()
		if err == nil {
			in.revision = rev
			return true, nil
		}
		// A retry after a lost answer fails its compare-and-set: read back.
		if cur, gerr := s.get(ctx, kv, key); gerr == nil {
			landed, beaten := readBack(cur)
			if landed {
				in.revision = cur.revision
				return true, nil
			}
			if beaten {
				return false, nil
			}
		}
		if !lost(err) || !rt.Again(ctx, err) {
			return false, jsutil.Wrap(jsutil.RequestError(s.js.Conn(), kvSubject(s.js, s.bucket, key), err), "%s", what)
		}
	}
}

// claim takes an unfinished change over for one recover run before it acts:
// it rewrites the intent with the run's claim, a compare-and-set on the
// revision the run's plan read. Of two runs that planned together only one
// wins; the other gets false (the record changed since: claimed or
// finished elsewhere) and leaves the change alone. A run that plans after
// the claim may take the change over (the claiming run may have died).
func (s *intents) claim(ctx context.Context, kv jetstream.KeyValue, in *Intent, by Claim) (bool, error) {
	next := *in
	next.Claim = &by
	val, err := json.Marshal(&next)
	if err != nil {
		return false, err
	}
	won, err := s.rewrite(ctx, kv, in, val, fmt.Sprintf("recover consumer %q on %q: claim its intent record", in.Consumer, in.Stream),
		func(cur *Intent) (bool, bool) {
			ours := cur != nil && cur.ID == in.ID && cur.Claim != nil && cur.Claim.ID == by.ID
			return ours, !ours && (cur == nil || cur.revision != in.revision)
		})
	if won {
		in.Claim = &by
	}
	return won, err
}

// complete deletes a finished change's intent (compare-and-set on the
// revision this run wrote, so a newer change's record is never removed).
// An intent already gone counts as completed.
func (s *intents) complete(ctx context.Context, in *Intent) error {
	ctx = context.WithoutCancel(ctx)
	kv, err := s.open(ctx, false)
	if err != nil {
		return jsutil.Wrap(err, "complete the intent record of consumer %q on %q", in.Consumer, in.Stream)
	}
	key := HistoryKey(in.Stream, in.Consumer)
	rt := jsutil.RetryEvery(s.settle, 200*time.Millisecond)
	for {
		dctx, cancel := s.ctx(ctx)
		err = kv.Delete(dctx, key, jetstream.LastRevision(in.revision))
		cancel()
		if err == nil {
			return nil
		}
		cur, gerr := s.get(ctx, kv, key)
		if gerr == nil && (cur == nil || cur.ID != in.ID) {
			return nil // deleted (our lost reply) or another change's record
		}
		if !lost(err) || rt.Expired() {
			return jsutil.Wrap(jsutil.RequestError(s.js.Conn(), kvSubject(s.js, s.bucket, key), err), "complete the intent record of consumer %q on %q", in.Consumer, in.Stream)
		}
		if !rt.Again(ctx, err) {
			return err
		}
	}
}

// get reads one intent; nil when there is none.
//
// It asks the bucket stream's leader (jsutil.KVLeaderGet), not any
// replica: a replica that lags could still show a record this run deleted
// (complete would then report it left behind) or miss one just written.
func (s *intents) get(ctx context.Context, kv jetstream.KeyValue, key string) (*Intent, error) {
	gctx, cancel := s.ctx(ctx)
	defer cancel()
	e, err := jsutil.KVLeaderGet(gctx, s.js, kv.Bucket(), key)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var in Intent
	if err := json.Unmarshal(e.Value, &in); err != nil {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "read intent record %q (revision %d): %w", key, e.Revision, err)
	}
	in.revision = e.Revision
	return &in, nil
}

// confirm reads each intent a watch found again from the bucket stream's
// leader: the watch's consumer may run on a replica that lags, and still
// show a record a change just completed (deleted). Those are dropped.
func (s *intents) confirm(ctx context.Context, kv jetstream.KeyValue, found []*Intent) ([]*Intent, error) {
	out := found[:0]
	for _, in := range found {
		cur, err := s.get(ctx, kv, HistoryKey(in.Stream, in.Consumer))
		if err != nil {
			return nil, err
		}
		if cur != nil {
			out = append(out, cur)
		}
	}
	return out, nil
}

// list reads the intents of stream's consumers (all of them when names is
// empty), sorted by consumer. A missing bucket holds none. A record that
// cannot be used (see badIntent) is skipped and returned among the bad
// records (those under a named consumer's key when names are given), and
// so is one whose values cannot be used (see intentProblem).
func (s *intents) list(ctx context.Context, stream string, names []string) ([]*Intent, []BadRecord, error) {
	bad := []BadRecord{}
	kv, err := s.open(ctx, false)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return []*Intent{}, bad, nil
	}
	if err != nil {
		return nil, nil, jsutil.Wrap(err, "read intent records of stream %q from %q", stream, s.bucket)
	}
	prior := s.js.Conn().LastError()
	w, stop, err := jsutil.WatchKV(ctx, kv, requestTimeout, jsutil.KeyToken(stream)+".*", jetstream.IgnoreDeletes())
	if err != nil {
		if derr := s.watchDenied(prior); derr != nil {
			err = derr
		}
		return nil, nil, jsutil.Wrap(err, "read intent records of stream %q from %q", stream, s.bucket)
	}
	defer stop()
	out := []*Intent{}
	timer := time.NewTimer(requestTimeout)
	defer timer.Stop()
	// The watch's consumer is created asynchronously: a refusal of it shows
	// only as the connection's last error, never as an answer.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if err := s.watchDenied(prior); err != nil {
				return nil, nil, jsutil.Wrap(err, "read intent records of stream %q from %q", stream, s.bucket)
			}
		case e, ok := <-w.Updates():
			if !ok {
				return nil, nil, jsutil.Errorf(jsutil.ErrConnection, "read intent records of stream %q from %q: the watch ended before it was up to date", stream, s.bucket)
			}
			if e == nil {
				out, err := s.confirm(ctx, kv, out)
				if err != nil {
					return nil, nil, jsutil.Wrap(err, "read intent records of stream %q from %q", stream, s.bucket)
				}
				slices.SortFunc(out, func(a, b *Intent) int { return strings.Compare(a.Consumer, b.Consumer) })
				out, bad = s.withinStream(ctx, stream, out, bad)
				return out, bad, nil
			}
			in, b := decodeIntentEntry(s.bucket, e)
			if b == nil {
				if p := intentProblem(in, time.Now()); p != "" {
					b = &BadRecord{Bucket: s.bucket, Key: e.Key(), Revision: e.Revision(), Problem: p}
				}
			}
			if b != nil {
				if ownKey(b.Key, stream, names) {
					bad = append(bad, *b)
				}
				continue
			}
			if len(names) == 0 || slices.Contains(names, in.Consumer) {
				out = append(out, in)
			}
		case <-timer.C:
			return nil, nil, jsutil.Errorf(jsutil.ErrConnection, "read intent records of stream %q from %q: no answer from the server in time", stream, s.bucket)
		case <-ctx.Done():
			return nil, nil, jsutil.Wrap(ctx.Err(), "read intent records of stream %q", stream)
		}
	}
}

// watchDenied is the permission error for a refused request about the
// bucket's stream on this connection since prior was its last error, if
// there was one.
func (s *intents) watchDenied(prior error) error {
	subject, last := jsutil.DeniedSince(s.js.Conn(), prior)
	if last == nil || !strings.Contains(subject, ".KV_"+s.bucket+".") && !strings.HasSuffix(subject, ".KV_"+s.bucket) {
		return nil
	}
	return jsutil.DeniedError(subject)
}

// ListUnfinished lists the changes of stream's consumers (all, or those named)
// that an interrupted run left unfinished, from bucket ("" = IntentBucket).
// Records that cannot be used are skipped (PlanRecover reports them).
// `jsctl consumer recover` finishes them.
func ListUnfinished(ctx context.Context, js jetstream.JetStream, bucket, stream string, consumers ...string) ([]Unfinished, error) {
	if bucket == "" {
		bucket = IntentBucket
	}
	s := &intents{js: js, bucket: bucket}
	list, _, err := s.list(ctx, stream, consumers) // records that cannot be used are skipped
	if err != nil {
		return nil, err
	}
	out := []Unfinished{}
	for _, in := range list {
		out = append(out, in.unfinished())
	}
	return out, nil
}

// kvSubject is the subject a KV write of key goes to (for telling a denied
// write from a lost reply).
func kvSubject(js jetstream.JetStream, bucket, key string) string {
	o := js.Options()
	if o.Domain != "" {
		return "$JS." + o.Domain + ".API.$KV." + bucket + "." + key
	}
	return "$KV." + bucket + "." + key
}

// withinStream moves to bad the intents whose sequences lie past the
// stream's end: a change's target is at most the stream's last sequence
// + 1 when it is planned, and a stream's last sequence never goes back (a
// stream created again since is told by its creation time, and its
// intents are cleared by recover), so no change recorded such a record.
// The stream's info is read afresh before a record is judged (the
// planner's may be older than a change started since). A stream that
// cannot be read is not checked.
func (s *intents) withinStream(ctx context.Context, stream string, list []*Intent, bad []BadRecord) ([]*Intent, []BadRecord) {
	info := s.info
	if info == nil || info.Config.Name != stream || slices.ContainsFunc(list, func(in *Intent) bool { return pastEnd(in, info) != "" }) {
		cctx, cancel := s.ctx(ctx)
		st, err := s.js.Stream(cctx, stream)
		cancel()
		if err != nil {
			return list, bad
		}
		info = st.CachedInfo()
	}
	out := list[:0]
	for _, in := range list {
		if why := pastEnd(in, info); why != "" {
			bad = append(bad, BadRecord{Bucket: s.bucket, Key: HistoryKey(in.Stream, in.Consumer), Revision: in.revision, Problem: "an intent record that cannot be used: " + why})
			continue
		}
		out = append(out, in)
	}
	return out, bad
}

// pastEnd says which of in's sequences lies past the end of the stream
// info describes ("" when none does, or in is of another stream of that
// name, which recover clears).
func pastEnd(in *Intent, info *jetstream.StreamInfo) string {
	stream, last := info.Config.Name, info.State.LastSeq
	switch {
	case jsutil.RecordedStream(stream, in.StreamCreated).Differs(jsutil.StreamIdentity(info)):
	case in.To.Sequence-1 > last: // To.Sequence is at least 1 (badIntent)
		return fmt.Sprintf("its target sequence %d is past the end of stream %q (last sequence %d)", in.To.Sequence, stream, last)
	case max(in.From.Delivered, in.From.AckFloor) > last:
		return fmt.Sprintf("its position before the change (delivered %d, ack floor %d) is past the end of stream %q (last sequence %d)", in.From.Delivered, in.From.AckFloor, stream, last)
	case in.Forget != nil && in.Forget.To > last:
		return fmt.Sprintf("its ack records to forget reach sequence %d, past the end of stream %q (last sequence %d)", in.Forget.To, stream, last)
	}
	return ""
}
