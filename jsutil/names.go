package jsutil

import (
	"fmt"
	"slices"
	"strings"
)

// MaxNameLen is the server's limit for stream and consumer names
// (JSMaxNameLen).
const MaxNameLen = 255

// NameProblem says what makes name unusable as a stream or consumer name,
// as the server judges names (isValidAssetName: they become tokens of API
// subjects), or "" when nothing does: empty, longer than MaxNameLen bytes,
// or holding a space, tab, line break, form feed, '.', '*', '>', '/' or '\'.
// Any other character, control characters and Unicode spaces included, is
// a name the server accepts, so jsctl takes it too (and prints it escaped).
func NameProblem(name string) string {
	switch {
	case name == "":
		return "it is empty"
	case len(name) > MaxNameLen:
		return fmt.Sprintf("it is longer than %d bytes", MaxNameLen)
	case strings.ContainsAny(name, " \t\r\n\f"):
		return "it may not contain spaces, tabs, line breaks or form feeds"
	case strings.ContainsAny(name, ".*>/\\"):
		return "it may not contain '.', '*', '>', '/' or '\\'"
	}
	return ""
}

// MaxBucketLen is the longest KV bucket name: its stream, KV_NAME, is a
// stream name.
const MaxBucketLen = MaxNameLen - len("KV_")

// BucketNameOK reports whether name can name a KV bucket: 1 to
// MaxBucketLen letters, digits, '-' or '_' (nats.go's rule, with the
// server's length; a longer name would overflow the requests about it).
func BucketNameOK(name string) bool {
	return name != "" && len(name) <= MaxBucketLen && strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) < 0
}

// Unique returns names without repeats, in the order each first appears:
// a stream or consumer named twice is acted on once.
func Unique(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
