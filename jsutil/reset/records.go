package reset

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// BadRecord is a record in one of jsctl's buckets that could not be used:
// it does not parse, or it parses to values no change can have (a missing
// name, a zero sequence, a key that is not its consumer's). Anyone allowed
// to write the bucket can put one there, so such a record is reported and
// skipped: the other records still work.
type BadRecord struct {
	Bucket   string `json:"bucket"`
	Key      string `json:"key"`
	Revision uint64 `json:"revision"`
	// Problem says what is wrong with it.
	Problem string `json:"problem"`
}

// String says it for people, with the command that removes the record.
func (b BadRecord) String() string {
	rev := ""
	if b.Revision > 0 {
		rev = fmt.Sprintf(" (revision %d)", b.Revision)
	}
	return fmt.Sprintf("skipped record %q in bucket %s%s: %s; it was left alone (remove it with: nats kv del %s %s)",
		b.Key, b.Bucket, rev, b.Problem, shellWord(b.Bucket), shellWord(b.Key))
}

// badIntent says what makes an intent record under key unusable, or ""
// when nothing does.
func badIntent(key string, data []byte, in *Intent) string {
	if err := json.Unmarshal(data, in); err != nil {
		return "not an intent record: " + err.Error()
	}
	switch {
	case in.ID == "":
		return "an intent record with no change id"
	case in.Stream == "" || in.Consumer == "":
		return "an intent record with no stream or consumer name"
	case key != HistoryKey(in.Stream, in.Consumer):
		return fmt.Sprintf("an intent record of consumer %q on %q stored under another consumer's key", in.Consumer, in.Stream)
	case in.Method != Reset && in.Method != Recreate && in.Method != Create:
		return fmt.Sprintf("an intent record with unknown method %q", in.Method)
	case in.To.Sequence == 0:
		return "an intent record with no target sequence"
	}
	return ""
}

// decodeIntentEntry reads one intent entry of bucket: the intent, or what
// makes it unusable.
func decodeIntentEntry(bucket string, e jetstream.KeyValueEntry) (*Intent, *BadRecord) {
	var in Intent
	if p := badIntent(e.Key(), e.Value(), &in); p != "" {
		return nil, &BadRecord{Bucket: bucket, Key: e.Key(), Revision: e.Revision(), Problem: p}
	}
	in.revision = e.Revision()
	return &in, nil
}

// badHistory says what makes a history record of consumer on stream
// unusable, or "" when nothing does.
func badHistory(stream, consumer string, data []byte, r *Record) string {
	if err := json.Unmarshal(data, r); err != nil {
		return "not a history record: " + err.Error()
	}
	switch {
	case r.Stream != stream || r.Consumer != consumer:
		return fmt.Sprintf("a history record of consumer %q on %q stored under another consumer's key", r.Consumer, r.Stream)
	case r.To.Sequence == 0:
		return "a history record with no target sequence"
	}
	return ""
}

// ownKey reports whether key belongs to one of the named consumers of
// stream (to any consumer when names is empty).
func ownKey(key, stream string, names []string) bool {
	if len(names) == 0 {
		return strings.HasPrefix(key, jsutil.KeyToken(stream)+".")
	}
	for _, n := range names {
		if key == HistoryKey(stream, n) {
			return true
		}
	}
	return false
}
