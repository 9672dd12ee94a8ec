package acks_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func testCtx(t testing.TB, d time.Duration) context.Context { return testserver.Context(t, d) }

func newJS(t testing.TB, s *server.Server) jetstream.JetStream {
	t.Helper()
	nc := testserver.Connect(t, s, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func addStream(t testing.TB, js jetstream.JetStream, name string, replicas int) {
	t.Helper()
	testserver.AddStream(t, js, jetstream.StreamConfig{
		Name: name, Subjects: []string{"orders.>", "audit.>"}, Replicas: replicas, Storage: jetstream.FileStorage,
	})
}

func addConsumer(t testing.TB, js jetstream.JetStream, stream, name string, ackWait time.Duration, mod ...func(*jetstream.ConsumerConfig)) jetstream.Consumer {
	t.Helper()
	cfg := jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, MaxAckPending: 1000}
	for _, f := range mod {
		f(&cfg)
	}
	return testserver.AddConsumer(t, js, stream, cfg)
}

// publish sends n messages "orders.<i>" with payload "p<i>", starting at i=from.
func publish(t testing.TB, js jetstream.JetStream, subject string, from, n int, hdr ...string) {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	for i := from; i < from+n; i++ {
		m := nats.NewMsg(fmt.Sprintf("%s.%d", subject, i))
		m.Data = []byte(fmt.Sprintf("p%d", i))
		for j := 0; j+1 < len(hdr); j += 2 {
			v := hdr[j+1]
			if strings.Contains(v, "%d") {
				v = fmt.Sprintf(v, i)
			}
			m.Header.Set(hdr[j], v)
		}
		if _, err := testserver.Publish(ctx, js, m); err != nil {
			t.Fatal(err)
		}
	}
}

// tally counts handler runs per stream sequence.
type tally struct {
	mu   sync.Mutex
	runs map[uint64]int
}

func newTally() *tally { return &tally{runs: map[uint64]int{}} }

func (c *tally) add(seq uint64) {
	c.mu.Lock()
	c.runs[seq]++
	c.mu.Unlock()
}

func (c *tally) snapshot() map[uint64]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[uint64]int, len(c.runs))
	for k, v := range c.runs {
		out[k] = v
	}
	return out
}

func (c *tally) handler(extra func(d acks.Delivery) error) acks.Handler {
	return func(ctx context.Context, d acks.Delivery) error {
		if extra != nil {
			if err := extra(d); err != nil {
				return err
			}
		}
		c.add(d.Seq)
		return nil
	}
}

// exactlyOnce fails unless every sequence 1..n ran exactly once.
func (c *tally) exactlyOnce(t testing.TB, n int) {
	t.Helper()
	runs := c.snapshot()
	for seq := uint64(1); seq <= uint64(n); seq++ {
		if runs[seq] != 1 {
			t.Errorf("message %d handled %d times, want 1", seq, runs[seq])
		}
	}
	if len(runs) != n {
		t.Errorf("handled %d distinct messages, want %d", len(runs), n)
	}
}

// waitFor polls cond until it holds or the deadline passes.
// consumeAll runs Consume until n messages were handled by tl (with a
// deadline), then stops it and returns the summary.
func consumeAll(t testing.TB, st *acks.Store, cons jetstream.Consumer, tl *tally, n int, h acks.Handler, opts ...acks.ConsumeOption) acks.Summary {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type out struct {
		sum acks.Summary
		err error
	}
	ch := make(chan out, 1)
	go func() {
		sum, err := st.Consume(ctx, cons, h, opts...)
		ch <- out{sum, err}
	}()
	testserver.WaitFor(t, 60*time.Second, fmt.Sprintf("%d messages handled", n), func() bool {
		select {
		case o := <-ch:
			ch <- o
			return true
		default:
		}
		return len(tl.snapshot()) >= n
	})
	cancel()
	o := <-ch
	if o.err != nil {
		t.Fatalf("consume: %v", o.err)
	}
	return o.sum
}
