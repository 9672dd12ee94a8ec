package acks_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// holdDone holds back done writes until gate is closed: Consume's
// pipelined ones (sent with send, see acks.SetDoneSend) are dropped
// unanswered, the synchronous ones (the fallback's retries, through the
// JetStream it wraps) wait for the gate. Everything else goes through.
type holdDone struct {
	jetstream.JetStream
	gate chan struct{}

	mu       sync.Mutex
	async    map[string]bool // record subjects of pipelined done writes dropped
	fallback map[string]bool // record subjects of synchronous done writes seen
}

func isDoneWrite(m *nats.Msg) bool {
	return strings.HasPrefix(m.Subject, "$KV.") && bytes.Contains(m.Data, []byte(`"s":"done"`))
}

func (h *holdDone) send(m *nats.Msg) error {
	select {
	case <-h.gate:
		return h.Conn().PublishMsg(m)
	default:
	}
	h.mu.Lock()
	h.async[m.Subject] = true
	h.mu.Unlock()
	return nil
}

func (h *holdDone) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	if isDoneWrite(m) {
		h.mu.Lock()
		h.fallback[m.Subject] = true
		h.mu.Unlock()
		select {
		case <-h.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return h.JetStream.PublishMsg(ctx, m, opts...)
}

func (h *holdDone) counts() (async, fallback int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.async), len(h.fallback)
}

// Consume pipelines done writes, but a handler starts only while fewer
// than 2 × workers messages are unsettled (handler started, done write not
// confirmed): the messages a killed process may leave to run again
// (docs/guarantees.md). And no message is acked before its done write is
// confirmed. With every done write unanswered, exactly 2 × workers
// handlers start, even after the completer gives up waiting (1s) and
// hands the writes to the synchronous path; nothing is acked; once the
// writes go through, every message is processed once.
func TestUnconfirmedDoneWritesBoundTheHandlers(t *testing.T) {
	const n, workers = 20, 2
	js := newJS(t, testserver.Start(t))
	addStream(t, js, "ORDERS", 1)
	publish(t, js, "orders", 1, n)
	cons := addConsumer(t, js, "ORDERS", "c", 30*time.Second)
	hold := &holdDone{JetStream: js, gate: make(chan struct{}), async: map[string]bool{}, fallback: map[string]bool{}}
	ctx := testCtx(t, 2*time.Minute)
	st, err := acks.Open(ctx, hold)
	if err != nil {
		t.Fatal(err)
	}
	acks.SetDoneSend(st, hold.send)
	var started atomic.Int64
	tl := newTally()
	h := tl.handler(func(acks.Delivery) error { started.Add(1); return nil })
	type out struct {
		sum acks.Summary
		err error
	}
	ch := make(chan out, 1)
	go func() {
		sum, err := st.Consume(ctx, cons, h, acks.WithWorkers(workers), acks.WithMaxMessages(n))
		ch <- out{sum, err}
	}()
	testserver.WaitFor(t, time.Minute, "the held done writes handed to the synchronous path", func() bool {
		_, fallback := hold.counts()
		return fallback >= 2*workers
	})
	async, fallback := hold.counts()
	if got := started.Load(); got != 2*workers || async != 2*workers || fallback != 2*workers {
		t.Errorf("with no done write confirmed: %d handlers started, %d done writes sent, %d retried; want %d of each", got, async, fallback, 2*workers)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.AckFloor.Stream != 0 || info.NumAckPending < 2*workers {
		t.Errorf("with no done write confirmed: ack floor %d and %d messages awaiting an ack, want 0 and at least %d (nothing acked)", info.AckFloor.Stream, info.NumAckPending, 2*workers)
	}
	close(hold.gate)
	o := <-ch
	if o.err != nil || o.sum.Processed != n {
		t.Fatalf("after the writes went through: %+v, %v; want %d processed", o.sum, o.err, n)
	}
	tl.exactlyOnce(t, n)
}
