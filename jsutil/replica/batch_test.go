package replica

import (
	"context"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/natsproc"
	"github.com/nats-io/nats.go/jetstream"
)

// TestTranslateRunsServer210: on nats-server 2.10, which ignores a direct
// get's batch, the search detects it and steps one message at a time, still
// exact. The 2.10 binary is built once and cached (natsproc.VersionBinary,
// shared with internal/matrix); when it cannot be built the test is skipped
// (failed under CI=true).
func TestTranslateRunsServer210(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs nats-server 2.10")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin, _, err := natsproc.VersionBinary(ctx, "v2.10.27")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("nats-server v2.10.27: %v", err)
		}
		t.Skipf("nats-server v2.10.27 not available (CI would fail): %v", err)
	}
	s := natsproc.Start(t, natsproc.Options{Binary: bin})
	checkRuns(t, connectJS(t, s.URL(), ""), false)
}

// checkRuns (part of TestTranslateOneServer): two origins whose copies
// share subjects in the target and arrived in long runs (40 of RUNS_A, 300
// of RUNS_B, 40 of RUNS_A, each run copied before the next is published).
// Every translation of a RUNS_A position steps over RUNS_B's run: RUNS
// (allow_direct) does it in batched direct gets, a handful of requests;
// RUNS_SLOW (no allow_direct: no batches) one message get per message
// stepped over. Both are exact. A server without batches (batches false:
// nats-server 2.10) answers RUNS's first batch with one message: RUNS then
// costs what RUNS_SLOW does, plus that one request.
func checkRuns(t *testing.T, js jetstream.JetStream, batches bool) {
	t.Helper()
	mustStream(t, js, jetstream.StreamConfig{Name: "RUNS_A", Subjects: []string{"runs.a.>"}})
	mustStream(t, js, jetstream.StreamConfig{Name: "RUNS_B", Subjects: []string{"runs.b.>"}})
	for _, c := range []struct {
		name   string
		direct bool
	}{{"RUNS", true}, {"RUNS_SLOW", false}} {
		mustStream(t, js, jetstream.StreamConfig{Name: c.name, AllowDirect: c.direct, Sources: []*jetstream.StreamSource{{Name: "RUNS_A"}, {Name: "RUNS_B",
			SubjectTransforms: []jetstream.SubjectTransformConfig{{Source: "runs.b.>", Destination: "runs.a.b.>"}}}}})
	}
	total := uint64(0)
	for _, run := range []struct {
		stream string
		n      int
	}{{"RUNS_A", 40}, {"RUNS_B", 300}, {"RUNS_A", 40}} {
		subject := "runs.a.x"
		if run.stream == "RUNS_B" {
			subject = "runs.b.x"
		}
		publish(t, js, run.stream, run.n, subject)
		total += uint64(run.n)
		waitMsgs(t, js, "RUNS", total)
		waitMsgs(t, js, "RUNS_SLOW", total)
	}
	rng := rand.New(rand.NewPCG(21, 2))
	origin := Side{JS: js, Stream: "RUNS_A"}
	for _, c := range []struct {
		name     string
		n        int
		min, max int // requests of the costliest translation
	}{{"RUNS", 100, 3, 30}, {"RUNS_SLOW", 20, 150, 400}} {
		if !batches && c.name == "RUNS" {
			c.n, c.min, c.max = 20, 151, 401
		}
		got := checkRandom(t, rng, origin, Side{JS: js, Stream: c.name}, readTarget(t, js, c.name, ""), c.n)
		t.Logf("RUNS_A → %-9s %s", c.name, got)
		if got.exact != got.tried {
			t.Errorf("RUNS_A → %s: %d of %d exact, want all", c.name, got.exact, got.tried)
		}
		if got.maxRequests < c.min || got.maxRequests > c.max {
			t.Errorf("RUNS_A → %s: at most %d requests, want between %d and %d", c.name, got.maxRequests, c.min, c.max)
		}
	}
}
