package acks_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/nats-io/nats.go/jetstream"
)

// BenchmarkConsume compares the library's idempotent processing (claim,
// done record, double ack) with plain JetStream processing with double acks
// (msg.DoubleAck), at 1 and 16 workers, on a local file-store server. It
// reports messages per second and, for records, the bucket's bytes per
// record.
//
//	go test ./jsutil/acks -run '^$' -bench BenchmarkConsume -benchtime 2000x
func BenchmarkConsume(b *testing.B) {
	for _, mode := range []string{"records", "plain"} {
		for _, workers := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/workers=%d", mode, workers), func(b *testing.B) {
				benchConsume(b, mode == "records", workers)
			})
		}
	}
}

func benchConsume(b *testing.B, records bool, workers int) {
	js := newJS(b, testserver.Start(b))
	addStream(b, js, "ORDERS", 1)
	n := b.N
	publish(b, js, "orders", 1, n)
	cons := addConsumer(b, js, "ORDERS", "c", 30*time.Second)
	ctx := testCtx(b, 10*time.Minute)
	var handled atomic.Int64
	h := func(context.Context, acks.Delivery) error { handled.Add(1); return nil }
	var st *acks.Store
	if records {
		var err error
		if st, err = acks.Open(ctx, js); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	start := time.Now()
	if records {
		sum, err := st.Consume(ctx, cons, h, acks.WithWorkers(workers), acks.WithMaxMessages(n))
		if err != nil || sum.Processed != n {
			b.Fatalf("%+v %v", sum, err)
		}
	} else {
		plainConsume(b, cons, workers, n, func() { handled.Add(1) })
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if int(handled.Load()) != n {
		b.Fatalf("handled %d of %d", handled.Load(), n)
	}
	b.ReportMetric(float64(n)/elapsed.Seconds(), "msgs/s")
	if records {
		status, err := st.KV().Status(ctx)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(status.Bytes())/float64(status.Values()), "kvbytes/record")
	}
}

// plainConsume is the baseline: the same fetch loop shape, the handler,
// then a double ack.
func plainConsume(b *testing.B, cons jetstream.Consumer, workers, n int, handle func()) {
	msgs := make(chan jetstream.Msg)
	var wg sync.WaitGroup
	var done atomic.Int64
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range msgs {
				handle()
				if err := m.DoubleAck(context.Background()); err != nil {
					b.Error(err)
				}
				done.Add(1)
			}
		}()
	}
	fetched := 0
	for fetched < n {
		batch, err := cons.Fetch(min(workers, n-fetched), jetstream.FetchMaxWait(time.Second))
		if err != nil {
			b.Fatal(err)
		}
		for m := range batch.Messages() {
			fetched++
			msgs <- m
		}
	}
	close(msgs)
	wg.Wait()
}
