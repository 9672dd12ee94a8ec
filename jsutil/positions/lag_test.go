package positions

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jsctl/jsctl/internal/testserver"
	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/reset"
	"github.com/nats-io/nats.go/jetstream"
)

// TestLagMeansOldestReceivable (issue 27, finding 3: the LAG TIME of a
// filtered consumer was the age of stream sequence 1, a message outside its
// filter): lag time is the age of the oldest message the consumer can still
// receive, the first one above its ack floor on its filter subjects, and
// every reader of it agrees: consumer check (Check), consumer info
// (reset.Describe), consumer ls and the picker (reset.List), on streams
// with and without direct gets.
func TestLagMeansOldestReceivable(t *testing.T) {
	js := testserver.JetStream(t)
	ctx := testserver.Context(t, 2*time.Minute)
	for _, direct := range []bool{false, true} {
		stream := map[bool]string{false: "LAG", true: "LAGD"}[direct]
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{stream + ".>"}, AllowDirect: direct}); err != nil {
			t.Fatal(err)
		}
		// 1-3 us, 4-5 eu, 6 asia, 7-8 eu.
		for _, s := range []string{"us", "us", "us", "eu", "eu", "asia", "eu", "eu"} {
			if _, err := js.Publish(ctx, stream+"."+s, nil); err != nil {
				t.Fatal(err)
			}
		}
		times := map[uint64]time.Time{}
		for seq := uint64(1); seq <= 8; seq++ {
			m, err := jsutil.MsgGet(ctx, js, stream, map[string]uint64{"seq": seq})
			if err != nil {
				t.Fatal(err)
			}
			times[seq] = m.Time
		}
		now := times[8].Add(90 * time.Second)
		for _, c := range []struct {
			name    string
			filters []string
			acked   int
			oldest  uint64 // 0: caught up
		}{
			{"eu", []string{stream + ".eu"}, 1, 5},
			{"fresh", []string{stream + ".eu"}, 0, 4}, // not sequence 1 (us)
			{"multi", []string{stream + ".eu", stream + ".asia"}, 2, 6},
			{"all", nil, 2, 3},
			{"done", []string{stream + ".us"}, 3, 0},
		} {
			cfg := jetstream.ConsumerConfig{Durable: c.name, AckPolicy: jetstream.AckExplicitPolicy}
			if len(c.filters) == 1 {
				cfg.FilterSubject = c.filters[0]
			} else {
				cfg.FilterSubjects = c.filters
			}
			cons, err := js.CreateConsumer(ctx, stream, cfg)
			if err != nil {
				t.Fatal(err)
			}
			ackFirst(t, ctx, cons, c.acked)
			want := time.Duration(0)
			if c.oldest != 0 {
				want = now.Sub(times[c.oldest])
			}
			rep, err := Check(ctx, js, Selection{Stream: stream, Consumers: []string{c.name}}, Thresholds{}, Options{Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			var checked *Metric
			for i, m := range rep.Results[0].Metrics {
				if m.Name == MetricLagTime {
					checked = &rep.Results[0].Metrics[i]
				}
			}
			if checked == nil || checked.Unknown || checked.Value != want.Seconds() {
				t.Errorf("%s %s: check's lag_time %+v, want %s (sequence %d)", stream, c.name, checked, want, c.oldest)
			}
			info, err := reset.Describe(ctx, js, stream, c.name, now)
			if err != nil {
				t.Fatal(err)
			}
			if info.LagNS == nil || *info.LagNS != want.Nanoseconds() {
				t.Errorf("%s %s: consumer info's lag_ns %s, want %d", stream, c.name, nsText(info.LagNS), want.Nanoseconds())
			}
			list, err := reset.List(ctx, js, stream, now)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range list {
				if s.Consumer == c.name && (s.LagNS == nil || *s.LagNS != want.Nanoseconds()) {
					t.Errorf("%s %s: consumer ls's lag_ns %s, want %d", stream, c.name, nsText(s.LagNS), want.Nanoseconds())
				}
			}
		}
	}
}

// ackFirst fetches and acknowledges the consumer's first n messages.
func ackFirst(t *testing.T, ctx context.Context, c jetstream.Consumer, n int) {
	t.Helper()
	if n == 0 {
		return
	}
	batch, err := c.Fetch(n, jetstream.FetchMaxWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for m := range batch.Messages() {
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
		got++
	}
	if got != n {
		t.Fatalf("fetched %d of %d messages", got, n)
	}
}

func nsText(ns *int64) string {
	if ns == nil {
		return "null"
	}
	return fmt.Sprint(*ns)
}
