package replica

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/seek"
	"github.com/nats-io/nats.go/jetstream"
)

// Side is a stream on some connection (the origin and the target may be on
// different clusters or JetStream domains).
type Side struct {
	JS     jetstream.JetStream
	Stream string
	// Created is, for an origin, the creation time of the incarnation of
	// the stream the position is of (a snapshot's saved one), nil for the
	// stream as its info says now. Translate refuses an origin created
	// again since (jsutil.Recreated), and holds the target's copies
	// against it where the origin cannot be read.
	Created *time.Time
}

// Method says how a position was translated.
type Method string

// Methods.
const (
	// Mirror is exact: a mirror stores each message at its origin sequence.
	Mirror Method = "mirror"
	// Source is exact: a sourced message records its origin sequence in the
	// Nats-Stream-Source header.
	Source Method = "source"
	// ByTime is approximate: the target's first message stored at or after
	// the origin message's time. Result.Reason says why nothing exact was
	// available.
	ByTime Method = "by-time"
)

// Result is a translated position.
type Result struct {
	Origin    string // the origin stream
	OriginSeq uint64 // the origin position asked for
	Target    string // the target stream
	// TargetSeq is the target's message that came from OriginSeq, or the
	// first one from after it (when OriginSeq was not copied: filtered,
	// deleted); 0 when the target has no such message yet.
	TargetSeq uint64
	// FromSeq is the origin sequence TargetSeq came from (== OriginSeq on an
	// exact hit); 0 for ByTime or when TargetSeq is 0.
	FromSeq uint64
	Method  Method
	// Behind is, when the target has not yet received OriginSeq, how many
	// origin sequences it is short of it (OriginSeq minus the last origin
	// sequence it copied); 0 otherwise.
	Behind uint64
	// Requests is the number of JetStream API requests the translation sent.
	Requests int

	// StartSeq is where a consumer on Target starts so that it delivers
	// first the message that came from OriginSeq (or from after it):
	// TargetSeq when set, otherwise the sequence the target will store it
	// at when that is known (a mirror: OriginSeq), else the target's next
	// sequence.
	StartSeq uint64
	// Reason says, for ByTime, why no exact translation was possible.
	Reason string
	// OriginTime is the time of the origin message used for ByTime (zero
	// otherwise).
	OriginTime time.Time
	// Exact says the translation is exact: from the server's own records
	// (Mirror, Source), and of copies made from this incarnation of the
	// origin. A replica whose copies there came from an earlier stream of
	// the origin's name (deleted and created again since) is not: its
	// Method is then ByTime (or Source, for a sourced copy of the current
	// origin that lacks the messages before it) and Reason says so.
	Exact bool
	// OriginCreated is the creation time of the origin incarnation the
	// copies were held against (nil: not known, so not checked: the origin
	// could not be read and no snapshot said).
	OriginCreated *time.Time
	// OriginUnreachable is set when the origin could not be read (origin.JS
	// nil, or its requests went unanswered): the translation used only the
	// target's records, OriginSeq was not checked against the origin, and
	// whether a target holding nothing from OriginSeq on is behind cannot be
	// told (that is refused as behind, Behind counting from the last origin
	// sequence it copied).
	OriginUnreachable bool
}

// BehindError is the error (class jsutil.ErrConflict) of a target that has
// not yet received the origin position asked for.
type BehindError struct {
	Origin, Target string
	OriginSeq      uint64 // asked for
	CopiedSeq      uint64 // the last origin sequence the target has copied (0: none)
	Behind         uint64 // OriginSeq - CopiedSeq
	OriginLastSeq  uint64 // the origin's last sequence (0 when it could not be read)
	// Unknown is set when the origin could not be read: the target holds
	// nothing from OriginSeq on, and whether more is coming is not known.
	Unknown bool
}

func (e *BehindError) Error() string {
	if e.Unknown {
		return fmt.Sprintf("%q holds nothing from sequence %d of %q on (it has copied up to %d) and %q cannot be read to tell whether more is coming",
			e.Target, e.OriginSeq, e.Origin, e.CopiedSeq, e.Origin)
	}
	return fmt.Sprintf("%q has not yet received sequence %d of %q: it has copied up to %d, %d short (the origin is at %d); wait for replication to catch up",
		e.Target, e.OriginSeq, e.Origin, e.CopiedSeq, e.Behind, e.OriginLastSeq)
}

// Translate finds the message of target that came from origin's sequence
// originSeq, or the first one after it when originSeq was not copied.
//
// origin.JS may be nil when the origin cannot be reached (a failover after
// losing it), and an origin whose requests go unanswered is treated the
// same: exact translations need only the target's records (see
// Result.OriginUnreachable); a by-time translation needs the origin.
//
// originSeq may be the origin's last sequence + 1 (a consumer that has
// finished everything): TargetSeq is then 0 and StartSeq the target's next
// sequence, once the target has copied everything.
//
// Errors: an unknown stream wraps jsutil.ErrNotFound; originSeq 0 or beyond
// the origin's last sequence + 1, or an invalid side, wraps jsutil.ErrBadInput;
// a target that has not yet received originSeq returns the Result (Behind
// set) and an error wrapping jsutil.ErrConflict and *BehindError.
func Translate(ctx context.Context, origin Side, originSeq uint64, target Side) (*Result, error) {
	t, err := newTranslator(ctx, origin, target)
	res := &Result{Origin: origin.Stream, OriginSeq: originSeq, Target: target.Stream}
	if t != nil {
		defer func() { res.Requests = t.requests() }()
	}
	if err != nil {
		return nil, err
	}
	if originSeq == 0 {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "translate a position of %q: sequences start at 1, got 0", origin.Stream)
	}
	res.OriginUnreachable = t.oinfo == nil
	if err := t.setIncarnation(); err != nil {
		return nil, err
	}
	res.OriginCreated = t.oid.Created
	// LastSeq+1 is a consumer that has finished everything: it starts with
	// the next message, wherever the target will store it.
	if t.oinfo != nil && originSeq > t.oinfo.State.LastSeq+1 {
		last := t.oinfo.State.LastSeq
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "translate sequence %d of %q: the stream's last sequence is %d", originSeq, origin.Stream, last)
	}
	plan, err := t.match(ctx)
	if err != nil {
		return nil, err
	}
	switch {
	case plan.mirror:
		res.Method, res.Exact = Mirror, true
		err = t.mirror(ctx, plan, originSeq, res)
	case len(plan.sources) > 0:
		res.Method, res.Exact = Source, true
		err = t.sources(ctx, plan, originSeq, res)
	default:
		res.Method, res.Reason = ByTime, plan.reason
		err = t.byTime(ctx, originSeq, res)
	}
	if err != nil && !errors.Is(err, jsutil.ErrConflict) {
		return nil, err
	}
	return res, err
}

// translator holds one translation's view of both streams.
type translator struct {
	origin, target Side
	oinfo, tinfo   *jetstream.StreamInfo
	or, tr         *seek.Reader // message readers of origin and target
	extra          int          // requests other than message gets
	batch          batcher      // batched reads of the target (batch.go)
	odomain        sideDomain   // origin's JetStream domain
	tdomain        sideDomain   // target's
	// oid is the origin incarnation the target's copies are held against
	// (see setIncarnation).
	oid jsutil.Identity
}

// setIncarnation sets the origin incarnation copies are held against: the
// origin as its info says (refusing one created again since the
// incarnation origin.Created names), else the one origin.Created names
// (possibly unknown).
func (t *translator) setIncarnation() error {
	rec := jsutil.RecordedStream(t.origin.Stream, t.origin.Created)
	if t.oinfo == nil {
		t.oid = rec
		return nil
	}
	t.oid = jsutil.StreamIdentity(t.oinfo)
	t.oid.Name = t.origin.Stream
	return rec.Check(t.oid, "the position was saved")
}

// current reports whether a target message m, whose Nats-Stream-Source
// identity is ident ("" for none, as for every mirrored copy), was copied
// from the origin incarnation the translation is for (jsutil.Identity
// CopyOf: by the identity where the copy has one, else by its time). A
// copy that cannot be told is taken as current.
func (t *translator) current(ident string, m *seek.Message) bool {
	same, _ := t.oid.CopyOf(ident, m.Time)
	return same
}

// staleReason says why a translation is not exact: the target's copies at
// the position came from an earlier stream of the origin's name.
func (t *translator) staleReason(at uint64, copied time.Time) string {
	return fmt.Sprintf("%q's copy at sequence %d came from an earlier stream %q (copied %s; %q now was created %s): the current %q's messages there are not on %q",
		t.target.Stream, at, t.origin.Stream, copied.UTC().Format(time.RFC3339Nano), t.origin.Stream, t.oid.CreatedText(), t.origin.Stream, t.target.Stream)
}

func (t *translator) requests() int {
	n := t.extra + t.tr.Requests()
	if t.or != nil {
		n += t.or.Requests()
	}
	return n
}

func newTranslator(ctx context.Context, origin, target Side) (*translator, error) {
	if target.JS == nil {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "stream %q: no jetstream connection", target.Stream)
	}
	if why := jsutil.NameProblem(origin.Stream); why != "" {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "invalid origin stream name %q: %s", origin.Stream, why)
	}
	t := &translator{origin: origin, target: target}
	var err error
	if t.tr, err = seek.NewReader(target.JS, target.Stream); err != nil {
		return nil, err
	}
	if t.tinfo, err = t.info(ctx, target); err != nil {
		return t, err
	}
	if origin.JS == nil {
		return t, nil
	}
	if t.or, err = seek.NewReader(origin.JS, origin.Stream); err != nil {
		return t, err
	}
	t.oinfo, err = t.info(ctx, origin)
	if errors.Is(err, jsutil.ErrConnection) && ctx.Err() == nil {
		// Unanswered (the origin's cluster is down or cut off): go on
		// with the target alone.
		t.oinfo, t.or, err = nil, nil, nil
	}
	return t, err
}

func (t *translator) info(ctx context.Context, s Side) (*jetstream.StreamInfo, error) {
	t.extra++
	st, err := s.JS.Stream(ctx, s.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, jsutil.Errorf(jsutil.ErrNotFound, "stream %q not found", s.Stream)
	}
	if err != nil {
		return nil, jsutil.Wrap(err, "read stream %q", s.Stream)
	}
	return st.CachedInfo(), nil
}

// mirror translates for a mirror: the target's sequences are the origin's.
func (t *translator) mirror(ctx context.Context, p *plan, seq uint64, res *Result) error {
	m, err := t.tr.Next(ctx, seq, ">")
	if err != nil {
		return err
	}
	if m != nil && !t.current("", m) {
		// Copied from an earlier origin: its sequences are not the
		// current origin's. Only time can say where the current one's
		// copies continue (a mirror keeps the origin's message times).
		res.Method, res.Exact, res.Reason = ByTime, false, t.staleReason(m.Sequence, m.Time)
		return t.byTime(ctx, seq, res)
	}
	if m != nil {
		res.TargetSeq, res.FromSeq, res.StartSeq = m.Sequence, m.Sequence, m.Sequence
		return nil
	}
	res.StartSeq = seq
	copied := t.tinfo.State.LastSeq
	if copied >= seq {
		// The target passed seq (its tail was skipped or deleted).
		res.StartSeq = copied + 1
		return nil
	}
	return t.checkBehind(ctx, p.mirrorFilters, copied, seq, res)
}

// checkBehind decides, for a target that holds nothing from seq on and has
// copied the origin up to copied, whether the origin holds messages it
// should have copied (behind: an error) or not (caught up).
func (t *translator) checkBehind(ctx context.Context, filters []string, copied, seq uint64, res *Result) error {
	be := &BehindError{Origin: t.origin.Stream, Target: t.target.Stream, OriginSeq: seq, CopiedSeq: copied, Behind: seq - copied}
	if t.oinfo == nil {
		be.Unknown = true
	} else {
		pending, err := t.firstPending(ctx, filters, copied+1)
		if err != nil || pending == nil {
			return err
		}
		be.OriginLastSeq = t.oinfo.State.LastSeq
	}
	res.Behind = be.Behind
	return jsutil.Classify(jsutil.ErrConflict, fmt.Errorf("translate sequence %d of %q to %q: %w", seq, t.origin.Stream, t.target.Stream, be))
}

// firstPending returns the origin's first message at or after from that a
// replica with these (origin-side) filters copies, or nil.
func (t *translator) firstPending(ctx context.Context, filters []string, from uint64) (*seek.Message, error) {
	if from > t.oinfo.State.LastSeq {
		return nil, nil
	}
	var first *seek.Message
	for _, f := range filters {
		m, err := t.or.Next(ctx, from, f)
		if err != nil {
			return nil, err
		}
		if m != nil && (first == nil || m.Sequence < first.Sequence) {
			first = m
		}
	}
	return first, nil
}

// byTime translates by the origin message's time.
func (t *translator) byTime(ctx context.Context, seq uint64, res *Result) error {
	if t.oinfo == nil {
		return jsutil.Errorf(jsutil.ErrConnection, "translate sequence %d of %q to %q: %s, and %q cannot be read to translate by time", seq, t.origin.Stream, t.target.Stream, res.Reason, t.origin.Stream)
	}
	om, err := t.or.Next(ctx, seq, ">")
	if err != nil {
		return err
	}
	if om == nil {
		// seq and everything after it are deleted on the origin.
		res.StartSeq = t.tinfo.State.LastSeq + 1
		return nil
	}
	at := om.Time
	if om.Sequence != seq {
		// seq itself is gone from the origin, perhaps deleted after the
		// target copied it. That copy was stored after seq's own time,
		// which is no earlier than the message before seq: start from that
		// one's time (from the target's first message when there is none),
		// erring towards repeating messages rather than skipping one.
		prev, err := seek.Seek(ctx, t.origin.JS, t.origin.Stream, om.Time.Add(-time.Nanosecond), seek.Options{Mode: seek.Before})
		if err != nil {
			return err
		}
		t.extra += 2
		at = time.Unix(0, 0)
		if prev.Message != nil {
			at = prev.Message.Time
		}
	}
	res.OriginTime = at
	sr, err := seek.Seek(ctx, t.target.JS, t.target.Stream, at, seek.Options{})
	if err != nil {
		return err
	}
	t.extra += 2 // stream info and one message get (the server's time index)
	if sr.Used == seek.Bisect {
		t.extra += bits(sr.LastSeq - sr.FirstSeq + 1)
	}
	res.StartSeq = sr.Sequence
	if sr.Message != nil {
		res.TargetSeq = sr.Message.Sequence
	}
	return nil
}

// bits is the number of binary-search steps over n items.
func bits(n uint64) int {
	b := 0
	for ; n > 0; n >>= 1 {
		b++
	}
	return b
}
