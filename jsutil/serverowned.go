package jsutil

import (
	"fmt"
	"strings"
)

// ServerOwner says why a consumer belongs to the server rather than to a
// user, or "" when it does not: nats-server creates a durable consumer on
// the origin stream for each mirror and source, named JS_MIRROR_<hash> or
// JS_SRC_<hash> (with a random suffix on servers that cannot take its
// sourcing flag) and marked with _nats.mirror.* or _nats.src.* metadata
// (server/stream.go). The server recreates it at the position the mirror
// needs; moving, pausing or restoring it breaks the mirror or source.
func ServerOwner(name string, metadata map[string]string) string {
	if s, ok := metadata["_nats.mirror.stream"]; ok {
		return fmt.Sprintf("the server made it for mirror stream %q", s)
	}
	if s, ok := metadata["_nats.src.stream"]; ok {
		return fmt.Sprintf("the server made it for stream %q, which sources from this one", s)
	}
	switch {
	case strings.HasPrefix(name, "JS_MIRROR_"):
		return "the server makes consumers named JS_MIRROR_* for mirrors"
	case strings.HasPrefix(name, "JS_SRC_"):
		return "the server makes consumers named JS_SRC_* for sourced streams"
	}
	return ""
}
