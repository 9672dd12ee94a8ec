package jsutil

import (
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// API first releases: the nats-server minor release that added an API
// jsctl uses (read from nats-server's source, server/jetstream_api.go).
const (
	// PauseAPISince is $JS.API.CONSUMER.PAUSE's (and per-message TTLs').
	PauseAPISince = "2.11"
	// ResetAPISince is $JS.API.CONSUMER.RESET's.
	ResetAPISince = "2.14"
)

// ServerBefore reports whether the server the connection is on announced
// (in its INFO) a version older than release ("2.14"), and that version.
// A single server answers an API subject it does not have with nothing at
// all (the request times out), so a request to an API the server cannot
// have is not sent. An unknown or unreadable version is not older: the
// caller then finds out from the server's answer. In a cluster it is the
// version of the server jsctl is connected to.
func ServerBefore(js jetstream.JetStream, release string) (string, bool) {
	if js == nil || js.Conn() == nil {
		return "", false
	}
	v := js.Conn().ConnectedServerVersion()
	have, ok := majorMinor(v)
	want, ok2 := majorMinor(release)
	if !ok || !ok2 {
		return v, false
	}
	return v, have[0] < want[0] || (have[0] == want[0] && have[1] < want[1])
}

// ErrServerLacks is the error for an API the server does not have: what
// (e.g. "consumer pause API"), the server's version and the first release
// with it, classed as bad input.
func ErrServerLacks(action, what, version, since string) error {
	return Errorf(ErrBadInput, "%s: the server (nats-server %s) has no %s (needs nats-server %s or later)", action, version, what, since)
}

// majorMinor reads "2.10" of "2.10.27" (or "v2.10.27-RC.1").
func majorMinor(v string) ([2]int, bool) {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return [2]int{}, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.SplitN(parts[1], "-", 2)[0])
	if err1 != nil || err2 != nil {
		return [2]int{}, false
	}
	return [2]int{major, minor}, true
}
