package jsutil

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Identities. A name outlives what it names: a stream, consumer or bucket
// deleted and created again under the same name is another object, and
// anything recorded about the first (a plan, an intent, a history record,
// a snapshot, a floor, an ack record, a replica's copies) says nothing
// about the second. The server's creation time tells them apart; it is in
// every stream and consumer info, and nats-server's own stream identity
// (the Nats-Stream-Identity header of 2.14+, and the last field of the
// Nats-Stream-Source header a sourced or mirrored copy carries) is a hash
// of it (StreamIdentityHash).
//
// Every package that acts on something recorded earlier compares through
// this file: Identity holds what was recorded, StreamIdentity and
// ConsumerIdentity what is there now, and Identity.Check the one
// comparison with the one error (Recreated, class ErrConflict: exit 5).

// ErrRecreated marks an object that was deleted and created again since it
// was recorded. Errors of this kind are also ErrConflict.
var ErrRecreated = errors.New("recreated since recorded")

// Kind is what an Identity names.
type Kind string

// The kinds of objects jsctl records.
const (
	KindStream   Kind = "stream"
	KindConsumer Kind = "consumer"
	KindBucket   Kind = "bucket"
)

// Identity is one incarnation of a stream, a consumer (of Stream) or a
// bucket: its name and when the server created it. A nil Created is not
// known (a record written by an older jsctl, or a server that did not
// say): such an identity matches any incarnation, and callers that need to
// know say so (Known).
type Identity struct {
	Kind    Kind
	Stream  string // a consumer's stream
	Name    string
	Created *time.Time
}

// StreamIdentity is the identity of the stream info describes.
func StreamIdentity(info *jetstream.StreamInfo) Identity {
	if info == nil {
		return Identity{Kind: KindStream}
	}
	return Identity{Kind: KindStream, Name: info.Config.Name, Created: TimePtr(info.Created)}
}

// ConsumerIdentity is the identity of the consumer info describes.
func ConsumerIdentity(info *jetstream.ConsumerInfo) Identity {
	if info == nil {
		return Identity{Kind: KindConsumer}
	}
	return Identity{Kind: KindConsumer, Stream: info.Stream, Name: info.Name, Created: TimePtr(info.Created)}
}

// BucketIdentity is the identity of a KV bucket (named without its KV_
// prefix) whose stream info is info.
func BucketIdentity(bucket string, info *jetstream.StreamInfo) Identity {
	id := Identity{Kind: KindBucket, Name: bucket}
	if info != nil {
		id.Created = TimePtr(info.Created)
	}
	return id
}

// RecordedStream is the identity of a stream as a record holds it.
func RecordedStream(name string, created *time.Time) Identity {
	return Identity{Kind: KindStream, Name: name, Created: utc(created)}
}

// RecordedConsumer is the identity of a consumer as a record holds it.
func RecordedConsumer(stream, name string, created *time.Time) Identity {
	return Identity{Kind: KindConsumer, Stream: stream, Name: name, Created: utc(created)}
}

// TimePtr is t in UTC, or nil for the zero time (not known).
func TimePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// UnixNanoTime is a creation time recorded as Unix nanoseconds (0: not
// known).
func UnixNanoTime(ns int64) *time.Time {
	if ns == 0 {
		return nil
	}
	t := time.Unix(0, ns).UTC()
	return &t
}

func utc(t *time.Time) *time.Time {
	if t == nil || t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// Known reports whether the identity says when its object was created.
func (id Identity) Known() bool { return id.Created != nil && !id.Created.IsZero() }

// Same reports whether id and now name the same incarnation: same kind and
// name and, where both are known, the same creation time. An unknown
// creation time on either side is not a difference (see Known).
func (id Identity) Same(now Identity) bool {
	if id.Kind != now.Kind || id.Name != now.Name || id.Stream != now.Stream {
		return false
	}
	if !id.Known() || !now.Known() {
		return true
	}
	return id.Created.Equal(*now.Created)
}

// Differs reports whether both creation times are known and differ: the
// one case that proves another incarnation (names are not compared).
func (id Identity) Differs(now Identity) bool {
	return id.Known() && now.Known() && !id.Created.Equal(*now.Created)
}

// Check is the one comparison: nil when now is the incarnation id
// recorded (or either creation time is unknown), else a *Recreated error
// (ErrRecreated, ErrConflict) naming both creation times. since says when
// the record was made, for the message: "the plan was made", "the
// snapshot was saved".
func (id Identity) Check(now Identity, since string) error {
	if !id.Differs(now) {
		return nil
	}
	return &Recreated{Recorded: id, Now: now, Since: since}
}

// Label names the object for messages: stream "ORDERS", consumer "c" on
// "ORDERS", bucket "JSCTL_ACKS".
func (id Identity) Label() string {
	switch id.Kind {
	case KindConsumer:
		return fmt.Sprintf("consumer %q on %q", id.Name, id.Stream)
	case "":
		return fmt.Sprintf("%q", id.Name)
	default:
		return fmt.Sprintf("%s %q", id.Kind, id.Name)
	}
}

// CreatedText is the identity's creation time for messages ("unknown"
// when not known).
func (id Identity) CreatedText() string { return CreatedText(id.Created) }

// CreatedText is a creation time for messages, in RFC 3339 UTC with its
// fraction ("unknown" for nil).
func CreatedText(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "unknown"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// Recreated is the error of Check: the object recorded was deleted and
// created again since.
type Recreated struct {
	Recorded, Now Identity
	Since         string
}

func (e *Recreated) Error() string {
	since := e.Since
	if since == "" {
		since = "it was recorded"
	}
	return fmt.Sprintf("%s was deleted and created again since %s (created %s then, %s now)",
		e.Recorded.Label(), since, e.Recorded.CreatedText(), e.Now.CreatedText())
}

// Unwrap makes a Recreated error both ErrRecreated and ErrConflict.
func (e *Recreated) Unwrap() []error { return []error{ErrRecreated, ErrConflict} }

// StreamIdentityHash is nats-server's identity of a stream created at
// created: the hash (server/stream.go identity, events.go getHash) that
// 2.14+ sends in Nats-Stream-Identity and writes as the last field of the
// Nats-Stream-Source header of a sourced or mirrored copy. "" for a zero
// time.
func StreamIdentityHash(created time.Time) string {
	if created.IsZero() {
		return ""
	}
	const size = 8 // sysHashLen
	const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	sum := sha256.Sum256([]byte(created.UTC().Format(time.RFC3339Nano)))
	var b strings.Builder
	for i := 0; i < size; i++ {
		b.WriteByte(digits[int(sum[i]%byte(len(digits)))])
	}
	return b.String()
}

// Is reports whether now is known to be the incarnation id recorded: the
// same kind and name, and both creation times known and equal. Unlike
// Same, an unknown creation time proves nothing here: Is answers "was
// this object made then?", as when a change tells its own consumer from
// one someone else made.
func (id Identity) Is(now Identity) bool {
	return id.Known() && now.Known() && id.Same(now)
}

// Hash is the server's stream identity of the incarnation
// (StreamIdentityHash), "" when its creation time is not known.
func (id Identity) Hash() string {
	if !id.Known() {
		return ""
	}
	return StreamIdentityHash(*id.Created)
}

// SourceIdentity is the origin identity a Nats-Stream-Source header
// carries: its sixth field, which nats-server 2.14+ writes
// (server/stream.go genSourceHeader: "<name> <seq> <filter> <destination>
// <subject> <ident>"); "" for a header of an older server.
func SourceIdentity(header string) string {
	f := strings.Split(header, " ")
	if len(f) < 6 {
		return ""
	}
	return f[5]
}

// CopyOf reports whether a replica's copy was made from this incarnation of
// its origin stream, and whether that could be told (known false: the
// incarnation's creation time is not known). ident is the copy's
// SourceIdentity, stored the time the replica stored the copy: the
// identity decides where the copy has one; otherwise the time does, as
// the origin's messages all come after its creation (a mirror keeps each
// message's origin time, by the origin's clock; a sourced copy is stored
// after its origin message, by the replica's clock, so servers whose
// clocks differ can misjudge a copy made within that difference of the
// origin's creation).
func (id Identity) CopyOf(ident string, stored time.Time) (same, known bool) {
	if !id.Known() {
		return true, false
	}
	if ident != "" {
		return ident == id.Hash(), true
	}
	return !stored.Before(*id.Created), true
}
