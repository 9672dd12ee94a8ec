package reset

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// BenchmarkReset measures a whole reset (plan, execute, verify, record in
// history) of one consumer in place and by recreate, and of 100 consumers
// of one stream with --all. Run:
//
//	go test ./jsutil/reset -run '^$' -bench . -benchtime 20x
//
// ms/consumer is the time per consumer moved.
func BenchmarkReset(b *testing.B) {
	for _, n := range []int{1, 100} {
		for _, m := range []Method{Reset, Recreate} {
			b.Run(fmt.Sprintf("consumers=%d/method=%s", n, m), func(b *testing.B) {
				js := single(b)
				addStream(b, js, "ORDERS", jetstream.LimitsPolicy, 1)
				publish(b, js, "orders.eu", 1000, 0)
				for i := 0; i < n; i++ {
					addConsumer(b, js, "ORDERS", jetstream.ConsumerConfig{Durable: fmt.Sprintf("c%03d", i), Description: "bench", MaxDeliver: 5})
				}
				opts := Options{Method: m}
				b.ResetTimer()
				start := time.Now()
				for i := 0; i < b.N; i++ {
					p, err := NewPlan(testCtx(b), js, "ORDERS", nil, true, Target{Kind: ToSeq, Seq: uint64(100 + i%2*400)}, opts)
					if err != nil {
						b.Fatal(err)
					}
					if err := Execute(testCtx(b), js, p, opts); err != nil {
						b.Fatal(err)
					}
					for _, c := range p.Changes {
						if !c.Verified || c.Method != m {
							b.Fatalf("%s: %s verified=%v %v", c.Consumer, c.Method, c.Verified, c.Warnings)
						}
					}
				}
				el := time.Since(start)
				b.ReportMetric(float64(el.Microseconds())/1000/float64(b.N*n), "ms/consumer")
			})
		}
	}
}
