package positions

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// DocumentVersion is the version of the snapshot document this package
// writes. Readers refuse documents of a later version.
const DocumentVersion = 1

// Snapshot is a saved set of consumer positions: the document stored in the
// bucket and written by --export.
type Snapshot struct {
	Version     int       `json:"version"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Created     time.Time `json:"created"`
	User        string    `json:"user"`
	Host        string    `json:"host"`
	// Streams hold the consumers, grouped by stream, in name order.
	Streams []StreamSnapshot `json:"streams"`
	// Revision is the document's revision in the bucket (0 when not
	// stored). It is not part of the document.
	Revision uint64 `json:"-"`
	// Warnings say what Take could not read (a position's time saved as
	// unknown). They are not part of the document.
	Warnings []string `json:"-"`
	// NamedAs is, for a stored document whose name is not the key it is
	// stored under, the name it gives itself: Name is its key (see
	// NameWarning). It is not part of the document.
	NamedAs string `json:"-"`
}

// StreamSnapshot is one stream's state when the snapshot was taken and its
// consumers.
type StreamSnapshot struct {
	Name string `json:"name"`
	// Created is when the server created the stream (nil in snapshots of
	// an older jsctl): a restore refuses a stream created again since, as
	// its sequences then name other messages.
	Created   *time.Time         `json:"created,omitempty"`
	FirstSeq  uint64             `json:"first_seq"`
	FirstTime *time.Time         `json:"first_time"`
	LastSeq   uint64             `json:"last_seq"`
	LastTime  *time.Time         `json:"last_time"`
	Messages  uint64             `json:"messages"`
	Replicas  int                `json:"replicas"`
	Consumers []ConsumerSnapshot `json:"consumers"`
}

// Position is a consumer's delivered or ack-floor position.
type Position struct {
	// StreamSeq and ConsumerSeq are the server's sequences for the
	// position.
	StreamSeq   uint64 `json:"stream_seq"`
	ConsumerSeq uint64 `json:"consumer_seq"`
	// Time is the stored time of the message at StreamSeq (nil when there
	// is none, e.g. at 0 or after the message was removed).
	Time *time.Time `json:"time"`
	// TimeUnknown says Time is nil because it could not be read when the
	// snapshot was taken (a read the server's permissions refused, or
	// that went unanswered): not known, rather than absent. A restore by
	// time refuses such a position; by sequence it is restored as usual.
	TimeUnknown bool `json:"time_unknown,omitempty"`
	// LastActive is when the consumer last delivered (for delivered) or
	// had a message acknowledged (for the ack floor), if ever.
	LastActive *time.Time `json:"last_active"`
}

// ConsumerSnapshot is one consumer at the time of the snapshot.
type ConsumerSnapshot struct {
	Name string `json:"name"`
	// Config is the configuration exactly as the server returned it in
	// $JS.API.CONSUMER.INFO, so a deleted consumer can be created again
	// with every field, including fields this client does not know.
	Config      json.RawMessage `json:"config"`
	Created     time.Time       `json:"created"`
	Delivered   Position        `json:"delivered"`
	AckFloor    Position        `json:"ack_floor"`
	Pending     uint64          `json:"pending"`
	AckPending  int             `json:"ack_pending"`
	Redelivered int             `json:"redelivered"`
	Waiting     int             `json:"waiting"`
	Paused      bool            `json:"paused"`
	// AckRecords is the consumer's ack-record scope (nil when the bucket
	// holds nothing for it).
	AckRecords *AckRecords `json:"ack_records"`
}

// NextSequence is the stream sequence a restore makes the consumer deliver
// next: the first one after its saved ack floor.
func (c *ConsumerSnapshot) NextSequence() uint64 { return c.AckFloor.StreamSeq + 1 }

// Consumers counts the snapshot's consumers.
func (s *Snapshot) Consumers() int {
	n := 0
	for _, st := range s.Streams {
		n += len(st.Consumers)
	}
	return n
}

// HasStream reports whether the snapshot holds consumers of stream.
func (s *Snapshot) HasStream(stream string) bool {
	for _, st := range s.Streams {
		if st.Name == stream {
			return true
		}
	}
	return false
}

// StreamNames lists the snapshot's streams.
func (s *Snapshot) StreamNames() []string {
	out := make([]string, 0, len(s.Streams))
	for _, st := range s.Streams {
		out = append(out, st.Name)
	}
	return out
}

// tidy checks a document read from the bucket or a file (name names it in
// errors) before anything acts on it: its name is a snapshot name, and its
// streams and consumers are names a server can hold, each consumer's saved
// configuration naming that consumer. Without this a bad name would be put
// into an API subject that no server answers, or a saved configuration
// would recreate another consumer. A stream listed twice is merged into its
// first entry and a consumer listed twice on a stream is kept once, from
// its first entry (an earlier jsctl saved a consumer named twice on the
// command line twice).
func (s *Snapshot) tidy(name string) error {
	if err := CheckSnapshotName(s.Name); err != nil {
		return jsutil.Errorf(jsutil.ErrBadInput, "snapshot %q: %w", name, err)
	}
	var out []StreamSnapshot
	at := map[string]int{}
	for _, ss := range s.Streams {
		if why := jsutil.NameProblem(ss.Name); why != "" {
			return jsutil.Errorf(jsutil.ErrBadInput, "snapshot %q holds an invalid stream name %q: %s", name, ss.Name, why)
		}
		i, seen := at[ss.Name]
		if !seen {
			i, at[ss.Name] = len(out), len(out)
			first := ss
			first.Consumers = []ConsumerSnapshot{}
			out = append(out, first)
		}
		for _, cs := range ss.Consumers {
			if why := jsutil.NameProblem(cs.Name); why != "" {
				return jsutil.Errorf(jsutil.ErrBadInput, "snapshot %q holds an invalid consumer name %q on stream %q: %s", name, cs.Name, ss.Name, why)
			}
			if err := checkSavedConfig(cs); err != nil {
				return jsutil.Errorf(jsutil.ErrBadInput, "snapshot %q, consumer %q on stream %q: %w", name, cs.Name, ss.Name, err)
			}
			if !slices.ContainsFunc(out[i].Consumers, func(c ConsumerSnapshot) bool { return c.Name == cs.Name }) {
				out[i].Consumers = append(out[i].Consumers, cs)
			}
		}
	}
	if out == nil {
		out = []StreamSnapshot{}
	}
	s.Streams = out
	return nil
}

// checkSavedConfig checks that a saved configuration, if any, is a JSON
// object whose consumer name (name, durable_name), where set, is the
// consumer's.
func checkSavedConfig(cs ConsumerSnapshot) error {
	if len(cs.Config) == 0 || string(cs.Config) == "null" {
		return nil
	}
	var names struct {
		Name    string `json:"name"`
		Durable string `json:"durable_name"`
	}
	if err := json.Unmarshal(cs.Config, &names); err != nil {
		return fmt.Errorf("its saved configuration is not a consumer configuration: %v", err)
	}
	for _, n := range []string{names.Name, names.Durable} {
		if n != "" && n != cs.Name {
			return fmt.Errorf("its saved configuration names consumer %q", n)
		}
	}
	return nil
}

// Take reads the selected consumers into a snapshot named name, without
// storing it (Save does both). Every selected stream and consumer must
// exist, and there must be at least one consumer.
func Take(ctx context.Context, js jetstream.JetStream, name, description string, sel Selection, opts Options) (*Snapshot, error) {
	opts = opts.withDefaults().withWho()
	if err := CheckSnapshotName(name); err != nil {
		return nil, err
	}
	groups, err := selectGroups(ctx, js, sel, opts)
	if err != nil {
		return nil, err
	}
	snap := &Snapshot{
		Version: DocumentVersion, Name: name, Description: description,
		Created: opts.Now().UTC(), User: opts.User, Host: opts.Host, Streams: []StreamSnapshot{},
	}
	ar := newAckReader(js, opts.AcksBucket)
	for _, g := range groups {
		if g.err != nil {
			return nil, g.err
		}
		if len(g.consumers) == 0 {
			continue
		}
		ss := streamSnapshot(g.r)
		for _, cname := range g.consumers {
			c, err := g.r.consumer(ctx, cname)
			if err != nil {
				return nil, err
			}
			if !c.Durable() {
				return nil, jsutil.Errorf(jsutil.ErrBadInput, "consumer %q on %q is ephemeral: only durable consumers can be saved in a snapshot", cname, g.stream)
			}
			cs := consumerSnapshot(c)
			for _, u := range c.Unknown {
				if u.Figure == "delivered_time" || u.Figure == "ack_floor_time" {
					snap.Warnings = append(snap.Warnings, fmt.Sprintf("consumer %q on %q: %s; saved as unknown (\"time_unknown\": true): it restores by sequence, not by time", cname, g.stream, u))
				}
			}
			if cs.AckRecords, err = ar.scope(ctx, g.stream, cname, false, opts.Now()); err != nil {
				return nil, jsutil.Wrap(err, "snapshot %q: ack records of consumer %q on %q", name, cname, g.stream)
			}
			for _, w := range cs.AckRecords.Problems() {
				snap.Warnings = append(snap.Warnings, fmt.Sprintf("consumer %q on %q: %s", cname, g.stream, w))
			}
			ss.Consumers = append(ss.Consumers, cs)
		}
		snap.Streams = append(snap.Streams, ss)
	}
	if snap.Consumers() == 0 {
		return nil, jsutil.Errorf(jsutil.ErrNotFound, "snapshot %q: no durable consumers on %s: nothing to save", name, selectionText(sel))
	}
	return snap, nil
}

// Save takes a snapshot and stores it under its name. A snapshot of that
// name that exists already is an error wrapping jsutil.ErrConflict.
func Save(ctx context.Context, js jetstream.JetStream, name, description string, sel Selection, opts Options) (*Snapshot, error) {
	opts = opts.withDefaults()
	snap, err := Take(ctx, js, name, description, sel, opts)
	if err != nil {
		return nil, err
	}
	if err := store(ctx, js, snap, opts); err != nil {
		return nil, err
	}
	return snap, nil
}

func streamSnapshot(r *streamReader) StreamSnapshot {
	st := r.info.State
	ss := StreamSnapshot{
		Name: r.name(), FirstSeq: st.FirstSeq, LastSeq: st.LastSeq, Messages: st.Msgs,
		Replicas: max(r.info.Config.Replicas, 1), Consumers: []ConsumerSnapshot{},
		Created: utcPtr(r.info.Created),
	}
	if st.Msgs > 0 {
		ss.FirstTime = utcPtr(st.FirstTime)
		ss.LastTime = utcPtr(st.LastTime)
	}
	return ss
}

func consumerSnapshot(c *Consumer) ConsumerSnapshot {
	info := c.Info
	return ConsumerSnapshot{
		Name: c.Name, Config: c.Config, Created: info.Created.UTC(),
		Delivered: Position{StreamSeq: info.Delivered.Stream, ConsumerSeq: info.Delivered.Consumer, Time: c.DeliveredTime, TimeUnknown: c.unknownReason("delivered_time") != "", LastActive: utcOf(info.Delivered.Last)},
		AckFloor:  Position{StreamSeq: info.AckFloor.Stream, ConsumerSeq: info.AckFloor.Consumer, Time: c.AckFloorTime, TimeUnknown: c.unknownReason("ack_floor_time") != "", LastActive: utcOf(info.AckFloor.Last)},
		Pending:   info.NumPending, AckPending: info.NumAckPending, Redelivered: info.NumRedelivered,
		Waiting: info.NumWaiting, Paused: info.Paused,
	}
}

func utcPtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func utcOf(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	return utcPtr(*t)
}

// selectionText names a selection's streams for messages.
func selectionText(sel Selection) string {
	if sel.Stream != "" {
		return "stream " + quote(sel.Stream)
	}
	out := "the streams matching"
	for i, p := range sel.Streams {
		if i > 0 {
			out += ","
		}
		out += " " + quote(p)
	}
	return out
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
