package acks_test

import (
	"context"
	"net"
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

// runConsume starts Consume in the background; stop cancels it and returns
// its result.
func runConsume(t *testing.T, st *acks.Store, cons jetstream.Consumer, h acks.Handler, opts ...acks.ConsumeOption) (stop func() acks.Summary) {
	ctx, cancel := context.WithCancel(context.Background())
	var (
		sum  acks.Summary
		err  error
		wg   sync.WaitGroup
		once sync.Once
	)
	// Failures are expected around a leader change; say why each happened.
	opts = append(opts, acks.OnResult(func(r acks.Result) {
		if r.Action == acks.Failed {
			t.Logf("message %d failed (delivery %d, lease lost %v): %v", r.Seq, r.Deliveries, r.LeaseLost, r.Err)
		}
	}))
	wg.Add(1)
	go func() {
		defer wg.Done()
		sum, err = st.Consume(ctx, cons, h, opts...)
	}()
	stop = func() acks.Summary {
		once.Do(func() {
			cancel()
			wg.Wait()
			if err != nil {
				t.Errorf("consume: %v", err)
			}
		})
		return sum
	}
	t.Cleanup(func() { stop() })
	return stop
}

// A file-store server restarts while messages are being handled: nothing
// is lost and nothing is done twice.
func TestServerRestartMidRun(t *testing.T) {
	dir := t.TempDir()
	s, err := testserver.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	port := s.Addr().(*net.TCPAddr).Port
	var mu sync.Mutex
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		s.Shutdown()
		s.WaitForShutdown()
	})
	js := newJS(t, s)
	addStream(t, js, "ORDERS", 1)
	const n = 200
	publish(t, js, "orders", 1, n)
	ctx := testCtx(t, 60*time.Second)
	st, err := acks.Open(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	cons := addConsumer(t, js, "ORDERS", "c", 2*time.Second)
	tl := newTally()
	h := tl.handler(func(acks.Delivery) error { time.Sleep(5 * time.Millisecond); return nil })
	// The lease outlives the restart and the reconnect on a loaded machine.
	stop := runConsume(t, st, cons, h, acks.WithWorkers(4), acks.WithLease(10*time.Second), acks.WithBusyDelay(200*time.Millisecond))
	testserver.WaitFor(t, 30*time.Second, "a quarter handled", func() bool { return len(tl.snapshot()) >= n/4 })
	mu.Lock()
	s.Shutdown()
	s.WaitForShutdown()
	s, err = testserver.New(dir, func(o *server.Options) { o.Port = port })
	mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	testserver.WaitFor(t, 45*time.Second, "all records done", func() bool {
		recs, err := st.List(ctx, acks.Filter{Scope: "ORDERS.c", State: acks.StateDone})
		return err == nil && len(recs) == n
	})
	sum := stop()
	tl.exactlyOnce(t, n)
	t.Logf("summary after restart: %+v", sum)
}

// An R3 bucket, stream and consumer in a 3-node cluster; the bucket's,
// the stream's and the consumer's leaders change mid-run.
func TestClusterLeaderChangeMidRun(t *testing.T) {
	c := testserver.StartCluster(t, 3)
	nc, err := nats.Connect(c.URLs(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	addStream(t, js, "ORDERS", 3)
	c.WaitForStreamLeader("ORDERS")
	const n = 200
	publish(t, js, "orders", 1, n)
	ctx := testCtx(t, 90*time.Second)
	st, err := acks.Open(ctx, js, acks.WithReplicas(3))
	if err != nil {
		t.Fatal(err)
	}
	if status, _ := st.KV().Status(ctx); status.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Replicas != 3 {
		t.Fatal("bucket is not R3")
	}
	cons := addConsumer(t, js, "ORDERS", "c", 2*time.Second, func(cc *jetstream.ConsumerConfig) { cc.Replicas = 3 })
	tl := newTally()
	h := tl.handler(func(acks.Delivery) error { time.Sleep(5 * time.Millisecond); return nil })
	stop := runConsume(t, st, cons, h, acks.WithWorkers(8), acks.WithLease(acks.MinReplicatedLease), acks.WithBusyDelay(200*time.Millisecond))
	stepdown := func(subj string, at int) {
		testserver.WaitFor(t, 30*time.Second, "progress before a leader change", func() bool { return len(tl.snapshot()) >= at })
		testserver.WaitFor(t, 30*time.Second, "leader stepdown of "+subj, func() bool {
			resp, err := nc.Request(subj, nil, 2*time.Second)
			if err != nil {
				return false
			}
			return !strings.Contains(string(resp.Data), `"error"`)
		})
	}
	stepdown("$JS.API.STREAM.LEADER.STEPDOWN.KV_"+acks.DefaultBucket, n/5)
	stepdown("$JS.API.STREAM.LEADER.STEPDOWN.ORDERS", 2*n/5)
	stepdown("$JS.API.CONSUMER.LEADER.STEPDOWN.ORDERS.c", 3*n/5)
	testserver.WaitFor(t, 60*time.Second, "all records done", func() bool {
		recs, err := st.List(ctx, acks.Filter{Scope: "ORDERS.c", State: acks.StateDone})
		return err == nil && len(recs) == n
	})
	sum := stop()
	tl.exactlyOnce(t, n)
	t.Logf("summary: %+v", sum)
}
