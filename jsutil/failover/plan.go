package failover

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/positions"
	"github.com/jsctl/jsctl/jsutil/replica"
	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/nats-io/nats.go/jetstream"
)

// Positions of the origin consumer that a copy starts after (as in
// jsutil/reset's ToConsumer targets).
const (
	PositionAckFloor  = reset.PositionAckFloor
	PositionDelivered = reset.PositionDelivered
)

// TranslateFunc finds the target's message that came from an origin
// sequence (replica.Translate).
type TranslateFunc func(ctx context.Context, origin replica.Side, originSeq uint64, target replica.Side) (*replica.Result, error)

// Options tune PlanCopy and PlanSnapshot. The zero value is usable.
type Options struct {
	// Position is the origin consumer's position the copy continues from:
	// PositionAckFloor ("" too: its ack floor + 1, the first message it
	// had not finished) or PositionDelivered (its delivered + 1).
	Position string
	// AllowLag plans a copy whose origin position the target has not
	// received yet (else refused): it starts after the target's last
	// message, so the origin's messages before the position that reach
	// the target later are delivered again.
	AllowLag bool
	// AllowInexact plans a copy whose position could not be translated
	// exactly (by time, or where the target's copies came from an earlier
	// stream of the origin's name), with a warning; else it is refused.
	AllowInexact bool
	// Reset is the options of the change on the target (plan, execute,
	// intents and history live in the target's buckets).
	Reset reset.Options
	// Positions reads the origin's consumers (timeouts, clock, acks bucket).
	Positions positions.Options
	// Translate replaces replica.Translate (nil: replica.Translate).
	Translate TranslateFunc
}

// Plan is a copy of consumers from an origin stream to a target stream (a
// mirror or a stream that sources the origin, here or on another cluster
// or domain): how each position was translated, and the change of the
// target's consumers, a jsutil/reset plan that reset.Execute applies on
// the target's connection like any other (intent, verification from the
// server's reply, history; reset.PlanRecover finishes a killed run).
type Plan struct {
	Origin   string `json:"origin"`
	Target   string `json:"target"`
	Position string `json:"position"`
	// Snapshot names the snapshot the positions come from ("" for the
	// origin consumers' positions now).
	Snapshot string  `json:"snapshot,omitempty"`
	Copies   []*Copy `json:"copies"`
	// Changes is the change of the consumers on the target, in the order
	// of Copies.
	Changes *reset.Plan `json:"changes"`
}

// Copy is one consumer's copy.
type Copy struct {
	Consumer string `json:"consumer"`
	// OriginDelivered and OriginAckFloor are the origin consumer's
	// position (as saved, for a snapshot).
	OriginDelivered uint64 `json:"origin_delivered"`
	OriginAckFloor  uint64 `json:"origin_ack_floor"`
	// OriginSeq is the first origin message the copy delivers (or the
	// first one after it that the target holds).
	OriginSeq   uint64      `json:"origin_sequence"`
	Translation Translation `json:"translation"`
	// OriginFilters are the consumer's filters on the origin, Filters
	// those of the copy (through the link's subject transform).
	OriginFilters []string `json:"origin_filter_subjects"`
	Filters       []string `json:"filter_subjects"`
	// Dropped lists the configuration fields not copied, with why.
	Dropped []string `json:"dropped"`

	notes []string
	// raw is the origin consumer's configuration, config the copy's.
	raw, config []byte
}

// Translation is how the origin sequence was found on the target (see
// replica.Result).
type Translation struct {
	// TargetSeq is the target's message that came from OriginSeq, or the
	// first one from after it (0: none yet); FromSeq the origin sequence
	// it came from.
	TargetSeq uint64 `json:"target_sequence"`
	FromSeq   uint64 `json:"from_sequence"`
	// Method is "mirror" or "source" (exact, from the server's own
	// records) or "by-time" (approximate).
	Method string `json:"method"`
	Exact  bool   `json:"exact"`
	// Behind is how many origin messages the target has not received yet
	// (0: it holds the position).
	Behind uint64 `json:"behind"`
	// Copied is, for a target behind, the last origin sequence it has
	// copied, and OriginLast the origin's last sequence (0: unknown).
	Copied     uint64 `json:"copied_up_to,omitempty"`
	OriginLast uint64 `json:"origin_last,omitempty"`
	// AfterLast says the consumer had finished every origin message: the
	// copy starts after the target's copy of the origin's last one.
	AfterLast bool `json:"after_last,omitempty"`
	// Reason says, for by-time, why nothing exact was available.
	Reason string `json:"reason,omitempty"`
	// OriginUnreachable says the origin could not be read: the position
	// was translated from the target's records alone.
	OriginUnreachable bool `json:"origin_unreachable,omitempty"`
	Requests          int  `json:"requests"`

	unknown bool
}

// PlanCopy plans copying consumers of the origin stream (the named ones,
// or every durable one with all) to the target stream: each is created on
// the target (or, if it exists there, moved) with its configuration, so
// that it delivers first the target's message that came from the first
// origin message the consumer had not finished (Options.Position). The
// origin's consumers are only read. Nothing changes anywhere.
func PlanCopy(ctx context.Context, origin replica.Side, consumers []string, all bool, target replica.Side, opts Options) (*Plan, error) {
	if all == (len(consumers) > 0) {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "name consumers or pass --all, not both or neither")
	}
	sel := positions.Selection{Stream: origin.Stream, Consumers: jsutil.Unique(consumers), All: all}
	if err := sel.Validate(); err != nil {
		return nil, err
	}
	snap, err := positions.Take(ctx, origin.JS, "copy", "", sel, opts.Positions)
	if errors.Is(err, jsutil.ErrNotFound) && all {
		// No durable consumers (when the stream exists): nothing to copy.
		if _, serr := origin.JS.Stream(ctx, origin.Stream); serr == nil {
			snap, err = &positions.Snapshot{Name: "copy"}, nil
		}
	}
	if err != nil {
		return nil, jsutil.Wrap(err, "copy consumers of %q to %q", origin.Stream, target.Stream)
	}
	return plan(ctx, origin, snap, nil, target, "", opts)
}

// PlanSnapshot plans returning the consumers of a snapshot taken on the
// origin stream (all, or those named) to their saved positions on the
// target stream, translated as PlanCopy does (with Options.Position
// PositionAckFloor: the saved ack floor + 1). The snapshot must hold the
// origin stream. Nothing changes anywhere.
func PlanSnapshot(ctx context.Context, origin replica.Side, snap *positions.Snapshot, consumers []string, target replica.Side, opts Options) (*Plan, error) {
	if !snap.HasStream(origin.Stream) {
		return nil, jsutil.Errorf(jsutil.ErrNotFound, "snapshot %q holds no consumers of stream %q (it holds %s)", snap.Name, origin.Stream, strings.Join(snap.StreamNames(), ", "))
	}
	for _, ss := range snap.Streams {
		if ss.Name == origin.Stream && ss.Created != nil {
			// The positions are of the origin the snapshot saw: the
			// target's copies are held against that one, and an origin
			// created again since is refused (replica.Side.Created).
			origin.Created = ss.Created
		}
	}
	return plan(ctx, origin, snap, jsutil.Unique(consumers), target, snap.Name, opts)
}

// plan translates the positions of the origin stream's consumers in snap
// (the named ones, or all) and plans the change on the target.
func plan(ctx context.Context, origin replica.Side, snap *positions.Snapshot, names []string, target replica.Side, snapshot string, opts Options) (*Plan, error) {
	if opts.Translate == nil {
		opts.Translate = replica.Translate
	}
	if opts.Position == "" {
		opts.Position = PositionAckFloor
	}
	if opts.Position != PositionAckFloor && opts.Position != PositionDelivered {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "unknown position %q: use %s or %s", opts.Position, PositionAckFloor, PositionDelivered)
	}
	action := fmt.Sprintf("copy consumers of %q to %q", origin.Stream, target.Stream)
	if snapshot != "" {
		action = fmt.Sprintf("restore snapshot %q on %q", snapshot, target.Stream)
	}
	ts, err := target.JS.Stream(ctx, target.Stream)
	if err != nil {
		return nil, jsutil.Wrap(err, "%s: stream %q", action, target.Stream)
	}
	tinfo := ts.CachedInfo()
	var oinfo *jetstream.StreamInfo
	if origin.JS != nil {
		if os, err := origin.JS.Stream(ctx, origin.Stream); err == nil {
			oinfo = os.CachedInfo()
		}
	}
	v := newView(origin.Stream, oinfo, tinfo)
	out := &Plan{Origin: origin.Stream, Target: target.Stream, Position: opts.Position, Snapshot: snapshot, Copies: []*Copy{}}
	var saved []positions.ConsumerSnapshot
	for _, ss := range snap.Streams {
		if ss.Name != origin.Stream {
			continue
		}
		for _, cs := range ss.Consumers {
			if len(names) == 0 || containsName(names, ss.Name, cs.Name) {
				saved = append(saved, cs)
			}
		}
	}
	for _, n := range names {
		if !containsSaved(saved, n) {
			return nil, jsutil.Errorf(jsutil.ErrNotFound, "%s: snapshot %q holds no consumer %q of %q", action, snapshot, n, origin.Stream)
		}
	}
	created := jsutil.TimePtr(tinfo.Created)
	var moves []reset.Move
	for _, cs := range saved {
		cp, m, err := copyOne(ctx, origin, target, tinfo, v, cs, opts)
		if err != nil {
			return nil, jsutil.Wrap(err, "%s: consumer %q", action, cs.Name)
		}
		if snapshot != "" {
			m.From = fmt.Sprintf("snapshot %q (taken on %q)", snapshot, origin.Stream)
		}
		m.StreamCreated = created
		out.Copies = append(out.Copies, cp)
		moves = append(moves, m)
	}
	changes, err := reset.PlanMoves(ctx, target.JS, target.Stream, moves, opts.Reset)
	if err != nil {
		return nil, jsutil.Wrap(err, "%s", action)
	}
	out.Changes = changes
	for i, c := range changes.Changes {
		note(c, out.Copies[i], v, opts)
	}
	return out, nil
}

// copyOne translates one consumer's position and adapts its configuration.
func copyOne(ctx context.Context, origin, target replica.Side, tinfo *jetstream.StreamInfo, v *view, cs positions.ConsumerSnapshot, opts Options) (*Copy, reset.Move, error) {
	cp := &Copy{
		Consumer: cs.Name, OriginDelivered: cs.Delivered.StreamSeq, OriginAckFloor: cs.AckFloor.StreamSeq,
		OriginSeq: cs.AckFloor.StreamSeq + 1, Dropped: []string{},
	}
	if opts.Position == PositionDelivered {
		cp.OriginSeq = cs.Delivered.StreamSeq + 1
	}
	seq, err := translate(ctx, origin, target, tinfo, v, cp, opts)
	if err != nil {
		return nil, reset.Move{}, err
	}
	a, err := adapt(cs.Config, seq, tinfo.Config.Replicas, v)
	if err != nil {
		return nil, reset.Move{}, err
	}
	cp.Filters, cp.Dropped = a.filters, append(cp.Dropped, a.dropped...)
	cp.OriginFilters = originFilters(cs)
	cp.notes = append(a.notes, unmappedNote(a.unmapped, v)...)
	cp.raw, cp.config = cs.Config, a.config
	from := fmt.Sprintf("its configuration on %q", origin.Stream)
	return cp, reset.Move{Consumer: cs.Name, Seq: seq, Config: a.config, From: from}, nil
}

// translate fills in cp.Translation and returns the target sequence the
// copy starts at. A consumer that had finished every origin message
// (cp.OriginSeq past the origin's last) starts after the target's copy of
// the last one.
func translate(ctx context.Context, origin, target replica.Side, tinfo *jetstream.StreamInfo, v *view, cp *Copy, opts Options) (uint64, error) {
	ask := cp.OriginSeq
	if v.originKnown && ask > v.originLast {
		cp.Translation.AfterLast = true
		if v.originLast == 0 {
			cp.Translation.Method, cp.Translation.Exact = v.method(), true
			return tinfo.State.LastSeq + 1, nil
		}
		ask = v.originLast
	}
	res, err := opts.Translate(ctx, origin, ask, target)
	var be *replica.BehindError
	switch {
	case errors.As(err, &be) && res != nil:
		cp.Translation.Copied, cp.Translation.OriginLast, cp.Translation.unknown = be.CopiedSeq, be.OriginLastSeq, be.Unknown
		if cp.Translation.AfterLast {
			res.Behind++ // the position is one past the last
		}
	case err != nil:
		return 0, err
	}
	cp.Translation.TargetSeq, cp.Translation.FromSeq, cp.Translation.Method = res.TargetSeq, res.FromSeq, string(res.Method)
	cp.Translation.Exact, cp.Translation.Behind, cp.Translation.Requests = res.Exact, res.Behind, res.Requests
	cp.Translation.Reason, cp.Translation.OriginUnreachable = res.Reason, res.OriginUnreachable
	seq := res.StartSeq
	if cp.Translation.AfterLast && res.TargetSeq > 0 && res.FromSeq == ask {
		seq = res.TargetSeq + 1
	}
	if seq == 0 {
		seq = tinfo.State.LastSeq + 1
	}
	return seq, nil
}

// note adds to a planned change what the copy says about it: how its
// position was found, the fields dropped, the filters, and the refusal of
// a position the target has not received.
func note(c *reset.Change, cp *Copy, v *view, opts Options) {
	if c.Method == reset.Create {
		// A created copy is shown against the origin consumer, not
		// against the server's defaults.
		c.Warnings = slices.DeleteFunc(c.Warnings, func(w string) bool { return strings.HasPrefix(w, defaultsWarning) })
		if diff, err := reset.DiffConfig(cp.raw, cp.config); err == nil {
			c.ConfigDiff = diff
		}
	}
	t := cp.Translation
	if !t.Exact {
		why := t.Reason
		if why == "" {
			why = fmt.Sprintf("%q keeps no exact record of which %q message each of its messages came from", v.target, v.origin)
		}
		how := "translated by time"
		if t.Method != string(replica.ByTime) {
			how = "not translated exactly"
		}
		inexact := fmt.Sprintf("%s (%s): the copy may skip or repeat messages near the position", how, why)
		if opts.AllowInexact {
			c.Warnings = append(c.Warnings, inexact)
		} else {
			if c.Refused != "" {
				c.Refused += "; "
			}
			c.Refused += inexact + "; pass --allow-inexact to copy it all the same"
		}
	}
	if t.OriginUnreachable {
		c.Warnings = append(c.Warnings, fmt.Sprintf("%q could not be read: the position was translated from %q's records alone", v.origin, v.target))
	}
	for _, d := range cp.Dropped {
		c.Warnings = append(c.Warnings, "not copied: "+d)
	}
	c.Warnings = append(c.Warnings, cp.notes...)
	if w := v.coverage(cp.Filters); w != "" {
		c.Warnings = append(c.Warnings, w)
	}
	if t.Behind == 0 {
		return
	}
	lag := fmt.Sprintf("%q has not yet received %q's sequence %d: %s", v.target, v.origin, cp.OriginSeq, behindText(t))
	if opts.AllowLag {
		c.Warnings = append(c.Warnings, lag+fmt.Sprintf("; the copy starts at %q's sequence %d, so messages of %q before sequence %d that reach %q later may be delivered again",
			v.target, c.To.Sequence, v.origin, cp.OriginSeq, v.target))
		return
	}
	if c.Refused != "" {
		c.Refused += "; "
	}
	c.Refused += lag + fmt.Sprintf(" (replication lag); wait for it to catch up, or pass --allow-lag to start the copy at %q's next message", v.target)
}

// behindText says how far behind a target is.
func behindText(t Translation) string {
	if t.unknown {
		return fmt.Sprintf("it has copied up to sequence %d, %s short, and the origin cannot be read to tell whether more is coming", t.Copied, messages(t.Behind))
	}
	out := fmt.Sprintf("it is %s behind (it has copied up to sequence %d", messages(t.Behind), t.Copied)
	if t.OriginLast > 0 {
		out += fmt.Sprintf("; the origin is at %d", t.OriginLast)
	}
	return out + ")"
}

// defaultsWarning starts the warnings reset.PlanMoves gives a created
// consumer's configuration against the server's defaults.
const defaultsWarning = "saved configuration against the server's defaults: "

func messages(n uint64) string {
	if n == 1 {
		return "1 message"
	}
	return fmt.Sprintf("%d messages", n)
}

func unmappedNote(unmapped []string, v *view) []string {
	if len(unmapped) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("filter %s is copied unchanged: the subject transform of %q's %s cannot be applied to it", strings.Join(unmapped, ", "), v.target, v.linkWord())}
}

func originFilters(cs positions.ConsumerSnapshot) []string {
	var f struct {
		One  string   `json:"filter_subject"`
		Many []string `json:"filter_subjects"`
	}
	_ = jsonUnmarshal(cs.Config, &f)
	switch {
	case f.One != "":
		return []string{f.One}
	case f.Many != nil:
		return f.Many
	}
	return []string{}
}

func containsName(names []string, stream, consumer string) bool {
	for _, n := range names {
		if n == consumer || n == stream+"/"+consumer {
			return true
		}
	}
	return false
}

func containsSaved(saved []positions.ConsumerSnapshot, n string) bool {
	for _, cs := range saved {
		if cs.Name == n || strings.HasSuffix(n, "/"+cs.Name) {
			return true
		}
	}
	return false
}
