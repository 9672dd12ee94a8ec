package jsutil

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// ListStreamNames returns the names of all streams, sorted. It stops when
// ctx is done; callers that only need a hint (shell completion) bound ctx
// tightly and ignore the error.
func ListStreamNames(ctx context.Context, js jetstream.JetStream) ([]string, error) {
	l := js.StreamNames(ctx)
	var names []string
	for n := range l.Name() {
		names = append(names, n)
	}
	if err := l.Err(); err != nil {
		return names, Wrap(err, "list streams")
	}
	sort.Strings(names)
	return names, nil
}

// ListConsumerNames returns the names of the consumers of stream, sorted.
func ListConsumerNames(ctx context.Context, js jetstream.JetStream, stream string) ([]string, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, Wrap(err, "get stream %q", stream)
	}
	l := s.ConsumerNames(ctx)
	var names []string
	for n := range l.Name() {
		names = append(names, n)
	}
	if err := l.Err(); err != nil {
		return names, Wrap(err, "list consumers of stream %q", stream)
	}
	sort.Strings(names)
	return names, nil
}

// ListNATSContexts returns the names of the nats CLI's saved contexts,
// sorted. It reads only local files.
func ListNATSContexts() ([]string, error) {
	dir, err := natsConfigDir()
	if err != nil {
		return nil, err
	}
	matches, err := filepath.Glob(filepath.Join(dir, "context", "*.json"))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, m := range matches {
		names = append(names, strings.TrimSuffix(filepath.Base(m), ".json"))
	}
	sort.Strings(names)
	if len(names) == 0 {
		if _, err := os.Stat(dir); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
	}
	return names, nil
}
