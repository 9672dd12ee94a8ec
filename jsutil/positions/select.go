package positions

import (
	"context"
	"path"
	"slices"
	"strings"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/nats-io/nats.go/jetstream"
)

// Selection names the consumers a command works on: Stream with named
// Consumers or All, or the streams matching Streams (glob patterns) with
// All.
type Selection struct {
	// Stream is one stream, by name.
	Stream string
	// Streams are glob patterns over stream names (path.Match syntax:
	// '*', '?', '[a-z]'); used instead of Stream.
	Streams []string
	// Consumers are named consumers of Stream.
	Consumers []string
	// All selects every durable consumer of each selected stream.
	All bool
}

// Validate checks that the selection names streams and consumers in one of
// the accepted ways.
func (s Selection) Validate() error {
	if err := s.validateStreams(); err != nil {
		return err
	}
	if len(s.Streams) > 0 && len(s.Consumers) > 0 {
		return jsutil.Errorf(jsutil.ErrBadInput, "with --streams, pass --all (consumers cannot be named across streams)")
	}
	if s.All == (len(s.Consumers) > 0) {
		return jsutil.Errorf(jsutil.ErrBadInput, "name one or more consumers, or pass --all (not both)")
	}
	return nil
}

// validateStreams checks the stream part alone: a stream name or patterns.
func (s Selection) validateStreams() error {
	switch {
	case s.Stream == "" && len(s.Streams) == 0:
		return jsutil.Errorf(jsutil.ErrBadInput, "name a stream, or select streams with --streams GLOB")
	case s.Stream != "" && len(s.Streams) > 0:
		return jsutil.Errorf(jsutil.ErrBadInput, "name a stream or pass --streams, not both (with --streams, pass --all: consumers cannot be named across streams)")
	}
	if s.Stream != "" {
		return checkName("stream", s.Stream)
	}
	for _, p := range s.Streams {
		if _, err := path.Match(p, ""); err != nil || p == "" {
			return jsutil.Errorf(jsutil.ErrBadInput, "bad --streams pattern %q: use '*', '?' and '[...]' as in shell globs", p)
		}
	}
	return nil
}

// MatchStream reports whether stream name matches one of patterns. Streams
// behind KV buckets and object stores (KV_*, OBJ_*) and jsctl's own
// (JSCTL_*, such as the audit stream JSCTL_AUDIT) match only a pattern that
// starts with that prefix.
func MatchStream(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); !ok {
			continue
		}
		if i := strings.IndexByte(name, '_'); i > 0 && (name[:i] == "KV" || name[:i] == "OBJ" || name[:i] == "JSCTL") && !strings.HasPrefix(p, name[:i+1]) {
			continue
		}
		return true
	}
	return false
}

// SelectStreams returns the streams a selection names, sorted: Stream
// itself (whether it exists is found out when it is read), or the existing
// streams that match Streams (none is not an error).
func SelectStreams(ctx context.Context, js jetstream.JetStream, s Selection) ([]string, error) {
	if err := s.validateStreams(); err != nil {
		return nil, err
	}
	if s.Stream != "" {
		return []string{s.Stream}, nil
	}
	names, err := jsutil.ListStreamNames(ctx, js)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, n := range names {
		if MatchStream(s.Streams, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// Target is one selected consumer.
type Target struct {
	Stream   string `json:"stream"`
	Consumer string `json:"consumer"`
}

// Select resolves a selection to its consumers, in stream then consumer
// order. A stream named with Stream that does not exist is an error
// wrapping jsutil.ErrNotFound; named consumers are not looked up.
func Select(ctx context.Context, js jetstream.JetStream, s Selection, opts Options) ([]Target, error) {
	groups, err := selectGroups(ctx, js, s, opts.withDefaults())
	if err != nil {
		return nil, err
	}
	out := []Target{}
	for _, g := range groups {
		if g.err != nil {
			return nil, g.err
		}
		for _, c := range g.consumers {
			out = append(out, Target{Stream: g.stream, Consumer: c})
		}
	}
	return out, nil
}

// group is one selected stream: its reader and the consumers selected on
// it, or the error reading it (a named stream that does not exist).
type group struct {
	stream    string
	r         *streamReader
	consumers []string
	err       error
}

// selectGroups reads each selected stream once. Only a named stream that
// cannot be found is kept as the group's error; other errors stop.
func selectGroups(ctx context.Context, js jetstream.JetStream, s Selection, opts Options) ([]group, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	for _, c := range s.Consumers {
		if err := checkName("consumer", c); err != nil {
			return nil, err
		}
	}
	streams, err := SelectStreams(ctx, js, s)
	if err != nil {
		return nil, err
	}
	out := make([]group, 0, len(streams))
	for _, st := range streams {
		g := group{stream: st}
		g.r, g.err = openStream(ctx, js, st, opts)
		if g.err != nil {
			if !isNotFound(g.err) {
				return nil, g.err
			}
			out = append(out, g)
			continue
		}
		if s.All {
			if g.consumers, err = g.r.durables(ctx); err != nil {
				return nil, err
			}
		} else {
			g.consumers = jsutil.Unique(s.Consumers)
		}
		out = append(out, g)
	}
	return out, nil
}

func sortStrings(s []string) { slices.Sort(s) }
