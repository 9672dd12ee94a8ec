package reset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func testCtx(t testing.TB) context.Context { return testserver.Context(t, time.Minute) }

// single starts a server and returns a JetStream handle to it.
func single(t testing.TB) jetstream.JetStream { return testserver.JetStream(t) }

func addStream(t testing.TB, js jetstream.JetStream, name string, ret jetstream.RetentionPolicy, replicas int) {
	t.Helper()
	testserver.AddStream(t, js, jetstream.StreamConfig{
		Name: name, Subjects: []string{strings.ToLower(name) + ".>"}, Retention: ret, Replicas: replicas,
	})
}

// publish sends n messages to subject, spaced by gap (spacing, not
// synchronisation), and returns their sequences.
func publish(t testing.TB, js jetstream.JetStream, subject string, n int, gap time.Duration) []uint64 {
	t.Helper()
	var seqs []uint64
	for i := 0; i < n; i++ {
		if i > 0 && gap > 0 {
			time.Sleep(gap)
		}
		ack, err := testserver.Publish(testCtx(t), js, &nats.Msg{Subject: subject, Data: fmt.Appendf(nil, "m%d", i+1)})
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, ack.Sequence)
	}
	return seqs
}

func addConsumer(t testing.TB, js jetstream.JetStream, stream string, cfg jetstream.ConsumerConfig) {
	t.Helper()
	if cfg.AckPolicy == jetstream.AckNonePolicy && cfg.DeliverSubject == "" {
		cfg.AckPolicy = jetstream.AckExplicitPolicy
	}
	if cfg.DeliverSubject != "" {
		testserver.AddPushConsumer(t, js, stream, cfg)
	} else {
		testserver.AddConsumer(t, js, stream, cfg)
	}
}

func info(t testing.TB, js jetstream.JetStream, stream, name string) *jetstream.ConsumerInfo {
	t.Helper()
	st, err := loadConsumer(testCtx(t), js, stream, name)
	if err != nil {
		t.Fatalf("consumer info %s: %v", name, err)
	}
	return st.info
}

// fetch returns the sequences a plain client receives from a pull
// consumer, acknowledging each.
func fetch(t testing.TB, js jetstream.JetStream, stream, name string, n int) []uint64 {
	t.Helper()
	return fetchSeqs(t, js, stream, name, n, true)
}

// fetchNoAck is fetch without acknowledging: the messages stay pending.
func fetchNoAck(t testing.TB, js jetstream.JetStream, stream, name string, n int) []uint64 {
	t.Helper()
	return fetchSeqs(t, js, stream, name, n, false)
}

// fetchSeqs takes up to n of the messages the consumer has for a client
// now (waiting at most 5s for the first: testserver.Take).
func fetchSeqs(t testing.TB, js jetstream.JetStream, stream, name string, n int, ack bool) []uint64 {
	t.Helper()
	var cons jetstream.Consumer
	var err error
	testserver.WaitFor(t, 30*time.Second, "consumer "+name+" to answer", func() bool {
		cons, err = js.Consumer(testCtx(t), stream, name)
		// Right after a create or a leader change a replicated consumer
		// may not answer yet (no responders): ask again.
		return !errors.Is(err, nats.ErrNoResponders)
	})
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	err = testserver.Take(cons, n, 5*time.Second, func(m jetstream.Msg) error {
		md, _ := m.Metadata()
		seqs = append(seqs, md.Sequence.Stream)
		if !ack {
			return nil
		}
		return m.DoubleAck(testCtx(t))
	})
	if err != nil {
		t.Fatal(err)
	}
	return seqs
}

// plan plans and fails the test on error.
func mustPlan(t testing.TB, js jetstream.JetStream, stream string, names []string, target Target, opts Options) *Plan {
	t.Helper()
	p, err := NewPlan(testCtx(t), js, stream, names, len(names) == 0, target, opts)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	return p
}

func mustRun(t testing.TB, js jetstream.JetStream, stream string, names []string, target Target, opts Options) *Plan {
	t.Helper()
	p := mustPlan(t, js, stream, names, target, opts)
	if err := Execute(testCtx(t), js, p, opts); err != nil {
		t.Fatalf("execute: %v", err)
	}
	for _, c := range p.Changes {
		if !c.Verified {
			t.Fatalf("consumer %s not verified: %v", c.Consumer, c.Warnings)
		}
	}
	return p
}

// configWithoutStart is a consumer's raw configuration without its start
// position and the metadata the server adds.
func configWithoutStart(t testing.TB, js jetstream.JetStream, stream, name string) map[string]any {
	t.Helper()
	st, err := loadConsumer(testCtx(t), js, stream, name)
	if err != nil {
		t.Fatal(err)
	}
	raw := st.raw.withoutServerMetadata()
	for _, k := range []string{"deliver_policy", "opt_start_seq", "opt_start_time"} {
		delete(raw, k)
	}
	b, _ := json.Marshal(raw)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

func sameConfig(t testing.TB, before, after map[string]any) {
	t.Helper()
	if !reflect.DeepEqual(before, after) {
		b1, _ := json.MarshalIndent(before, "", " ")
		b2, _ := json.MarshalIndent(after, "", " ")
		t.Fatalf("configuration changed:\nbefore %s\nafter  %s", b1, b2)
	}
}

// cnt is a plan count, -1 when it is unknown (nil).
func cnt(n *uint64) int64 {
	if n == nil {
		return -1
	}
	return int64(*n)
}
