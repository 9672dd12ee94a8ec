package commands

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go/jetstream"
)

// The health answers follow what the fetcher and the looks at the
// consumer report, in order of precedence: stopping, the consumer gone,
// the connection down, no answer for longer than --timeout.
func TestConsumeHealthStates(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	connected := true
	h := newConsumeHealth("ORDERS", "billing", 5*time.Second, func() bool { return connected }, func() time.Time { return now })
	expect := func(what string, healthy, ready bool, reason string) {
		t.Helper()
		ok, why := h.healthy()
		rok, rwhy := h.readiness()
		if ok != healthy || rok != ready || !strings.Contains(why+" | "+rwhy, reason) {
			t.Errorf("%s: healthy %v (%s), ready %v (%s); want %v, %v, %q", what, ok, why, rok, rwhy, healthy, ready, reason)
		}
	}
	expect("at start", true, false, "waiting for the first answered fetch")
	now = now.Add(time.Second)
	h.fetched(acks.Fetch{Answered: true})
	expect("answered", true, true, "ok: fetching from consumer \"billing\" on stream \"ORDERS\"")
	if !h.answeredRecently() {
		t.Error("just answered: not recent")
	}

	now = now.Add(5 * time.Second)
	h.fetched(acks.Fetch{Err: errors.New("context deadline exceeded")})
	expect("5s without an answer", true, true, "ok")
	now = now.Add(time.Second)
	expect("6s without an answer", false, true, "no answer from the server since 2026-12-02T10:00:01Z, 6s ago (context deadline exceeded); asking again")
	h.looked(nil)
	expect("a look answered", true, true, "ok")

	connected = false
	expect("connection down", false, true, "not connected to the server (reconnecting); no answer since 2026-12-02T10:00:07Z")
	connected = true

	now = now.Add(time.Second)
	h.fetched(acks.Fetch{Err: jetstream.ErrConsumerDeleted, ConsumerGone: true})
	now = now.Add(3 * time.Second)
	h.looked(jetstream.ErrConsumerNotFound)
	expect("consumer deleted", false, true, "consumer \"billing\" on stream \"ORDERS\" does not exist (deleted?): the server says so since 2026-12-02T10:00:08Z")
	if h.answeredRecently() {
		t.Error("a missing consumer counts as answered recently: the looks would stop")
	}
	h.fetched(acks.Fetch{Answered: true})
	expect("created again", true, true, "ok")

	h.fetched(acks.Fetch{Stopped: true, Err: errors.New("permission denied: this user may not write ack records to bucket \"JSCTL_ACKS\"")})
	expect("denied", false, false, "stopping: the run ends: permission denied: this user may not write ack records")
	h.stop("later reason")
	expect("the first reason stays", false, false, "the run ends: permission denied")
}
