package positions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/nats-io/nats.go/jetstream"
)

// Bucket is the KV bucket that holds snapshots, one key per snapshot name.
const Bucket = "JSCTL_SNAPSHOTS"

// store writes snap under its name, creating the bucket on first use with
// the replicas of the snapshot's largest stream, so the snapshot is as
// available as what it describes.
func store(ctx context.Context, js jetstream.JetStream, snap *Snapshot, opts Options) error {
	replicas := 1
	for _, st := range snap.Streams {
		replicas = max(replicas, st.Replicas)
	}
	kv, err := openBucket(ctx, js, opts, min(replicas, 5))
	if err != nil {
		return err
	}
	b, err := json.Marshal(snap)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	rev, err := kv.Create(rctx, snap.Name, b)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return jsutil.Errorf(jsutil.ErrConflict, "snapshot %q exists already: choose another name, or remove it first with jsctl consumer snapshot rm %s --execute", snap.Name, snap.Name)
	}
	if err != nil {
		// A refused write is never answered: name the refusal of this
		// write, not another request's.
		err = jsutil.RequestError(js.Conn(), jsutil.KVSubject(js, opts.SnapshotBucket, snap.Name), err)
		if subject := jsutil.DeniedSubject(err); subject != "" {
			err = jsutil.DeniedError(subject)
		}
		return jsutil.Wrap(err, "store snapshot %q in bucket %q (%d bytes)", snap.Name, opts.SnapshotBucket, len(b))
	}
	snap.Revision = rev
	return nil
}

// openBucket opens the snapshot bucket; with replicas > 0 it creates a
// missing one, else a missing bucket is jetstream.ErrBucketNotFound. An
// unanswered request is sent again for up to jsutil.RetryFor(ctx), or
// until ctx ends (see jsutil.OpenKV).
func openBucket(ctx context.Context, js jetstream.JetStream, opts Options, replicas int) (jetstream.KeyValue, error) {
	bucket := opts.SnapshotBucket
	kv, err := jsutil.OpenKV(ctx, js, jetstream.KeyValueConfig{
		Bucket:      bucket,
		Description: "jsctl consumer position snapshots",
		History:     1,
		Replicas:    replicas,
		Storage:     jetstream.FileStorage,
	}, replicas > 0, opts.Timeout, jsutil.RetryFor(ctx))
	if err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, jsutil.Wrap(err, "open snapshot bucket %q", bucket)
	}
	return kv, err
}

// Get reads the snapshot called name; a missing one is an error wrapping
// jsutil.ErrNotFound.
func Get(ctx context.Context, js jetstream.JetStream, name string, opts Options) (*Snapshot, error) {
	opts = opts.withDefaults()
	if err := CheckSnapshotName(name); err != nil {
		return nil, err
	}
	kv, err := openBucket(ctx, js, opts, 0)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, notFound(name)
	}
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	e, err := kv.Get(rctx, name)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, notFound(name)
	}
	if err != nil {
		return nil, jsutil.Wrap(err, "read snapshot %q", name)
	}
	return decode(name, name, e.Value(), e.Revision(), opts.Now())
}

func notFound(name string) error {
	return jsutil.Errorf(jsutil.ErrNotFound, "snapshot %q not found (jsctl consumer snapshot ls lists them)", name)
}

// Decode reads a snapshot document (as stored or exported); name is used in
// errors. Its values are checked as a stored one's are (see checkValues). A document of a later version than DocumentVersion is refused, and
// so is one naming a stream or consumer no server can hold (a document
// anyone allowed to write the bucket, or the file, controls). A stream or
// consumer the document lists twice is kept once, from its first entry.
func Decode(name string, data []byte) (*Snapshot, error) {
	return decode(name, "", data, 0, time.Now())
}

// decode reads the document of snapshot name (in errors) stored under key
// ("" for a file): a stored snapshot's name is its key.
func decode(name, key string, data []byte, rev uint64, now time.Time) (*Snapshot, error) {
	var s Snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "snapshot %q is not a snapshot document: %v", name, err)
	}
	switch {
	case s.Version == 0 || s.Name == "":
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "snapshot %q is not a snapshot document (no version or name)", name)
	case s.Version > DocumentVersion:
		return nil, jsutil.Errorf(jsutil.ErrBadInput, "snapshot %q has document version %d; this jsctl reads up to version %d (upgrade jsctl)", name, s.Version, DocumentVersion)
	}
	if key != "" && s.Name != key {
		s.Name, s.NamedAs = key, s.Name
	}
	if err := s.tidy(name); err != nil {
		return nil, err
	}
	if err := s.checkValues(name, now); err != nil {
		return nil, err
	}
	s.Revision = rev
	return &s, nil
}

// ListChecked reads every stored snapshot, oldest first; with stream set,
// only those holding consumers of that stream. No bucket means no
// snapshots. It also returns the records of the bucket that are not
// snapshot documents jsctl can read (anyone allowed to write the bucket
// can put one there): skipped, so the others are still listed.
func ListChecked(ctx context.Context, js jetstream.JetStream, stream string, opts Options) ([]*Snapshot, []reset.BadRecord, error) {
	opts = opts.withDefaults()
	names, err := Names(ctx, js, opts)
	if err != nil {
		return nil, nil, err
	}
	out := []*Snapshot{}
	bad := []reset.BadRecord{}
	for _, n := range names {
		s, err := Get(ctx, js, n, opts)
		if errors.Is(err, jsutil.ErrNotFound) {
			continue // removed meanwhile
		}
		if errors.Is(err, jsutil.ErrBadInput) {
			bad = append(bad, reset.BadRecord{Bucket: opts.SnapshotBucket, Key: n, Problem: err.Error()})
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if stream == "" || s.HasStream(stream) {
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(a, b *Snapshot) int { return a.Created.Compare(b.Created) })
	return out, bad, nil
}

// Names lists the stored snapshots' names, sorted.
func Names(ctx context.Context, js jetstream.JetStream, opts Options) ([]string, error) {
	opts = opts.withDefaults()
	kv, err := openBucket(ctx, js, opts, 0)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return []string{}, nil
	}
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	out, err := jsutil.KVKeys(rctx, kv, opts.Timeout)
	if err != nil {
		return nil, jsutil.Wrap(err, "list snapshots in bucket %q", opts.SnapshotBucket)
	}
	slices.Sort(out)
	return out, nil
}

// Remove deletes the snapshot called name (its key is purged); a missing
// one is an error wrapping jsutil.ErrNotFound. The document is not read:
// one that does not parse, or holds values no snapshot may, is removed all
// the same (this is the way to).
func Remove(ctx context.Context, js jetstream.JetStream, name string, opts Options) error {
	opts = opts.withDefaults()
	if err := CheckSnapshotName(name); err != nil {
		return err
	}
	kv, err := openBucket(ctx, js, opts, 0)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return notFound(name)
	}
	if err != nil {
		return fmt.Errorf("remove snapshot %q: %w", name, err)
	}
	gctx, gcancel := context.WithTimeout(ctx, opts.Timeout)
	e, err := kv.Get(gctx, name)
	gcancel()
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return notFound(name)
	}
	if err != nil {
		return jsutil.Wrap(err, "read snapshot %q", name)
	}
	return removeRevision(ctx, kv, name, e.Revision(), opts)
}

// RemoveRead deletes the snapshot snap as it was read (Get): one saved
// again under its name since (another revision) is left alone, an error
// wrapping jsutil.ErrConflict, and so is one removed since.
func RemoveRead(ctx context.Context, js jetstream.JetStream, snap *Snapshot, opts Options) error {
	opts = opts.withDefaults()
	kv, err := openBucket(ctx, js, opts, 0)
	if err != nil {
		return fmt.Errorf("remove snapshot %q: %w", snap.Name, err)
	}
	return removeRevision(ctx, kv, snap.Name, snap.Revision, opts)
}

// removeRevision purges name if its revision is still rev.
func removeRevision(ctx context.Context, kv jetstream.KeyValue, name string, rev uint64, opts Options) error {
	rctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	if err := kv.Purge(rctx, name, jetstream.LastRevision(rev)); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return jsutil.Errorf(jsutil.ErrConflict, "remove snapshot %q: it changed since it was read (saved again or removed); nothing removed: run the command again", name)
		}
		return jsutil.Wrap(err, "remove snapshot %q", name)
	}
	return nil
}
