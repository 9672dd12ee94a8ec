package commands

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/jsctl/jsctl/jsutil/positions"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// consumeMetrics are consume's Prometheus metrics (docs/consume.md,
// "Metrics"), in a registry of the run's own. Every jsctl_consume_ metric
// carries the stream and the consumer as labels. The message counts are
// counted from the results exactly as the --json summary counts them, so
// that at the end of a run they equal it:
//
//	outcome="processed"      summary "processed"
//	outcome="duplicate"      summary "duplicates"
//	outcome="failed"         summary "failed_deliveries" (every failed delivery)
//	outcome="busy"           summary "busy"
//	outcome="released"       summary "released"
//	outcome="dead_lettered"  summary "dead_lettered" (those sweeps published included)
//
// jsctl_consume_terminated_total is summary "terminated". The consumer's
// pending count and ack floor lag are read when /metrics is scraped (at
// most --timeout), and left out of that scrape when they cannot be read: a
// figure that is not known is not given.
type consumeMetrics struct {
	reg        *prometheus.Registry
	messages   *prometheus.CounterVec
	terminated prometheus.Counter
	leaseLost  prometheus.Counter
	duration   prometheus.Histogram
	inFlight   prometheus.Gauge
	lastDone   *lastDone
}

// consumeOutcomes are the values of the outcome label, each counted from
// the start (at 0), so that a rate over them exists from the first scrape.
var consumeOutcomes = []string{"processed", "duplicate", "failed", "busy", "released", "dead_lettered"}

// handlerBuckets are the handler duration histogram's upper bounds, in
// seconds: Prometheus' defaults, and on to ten minutes.
var handlerBuckets = append(append([]float64{}, prometheus.DefBuckets...), 30, 60, 120, 300, 600)

// newConsumeMetrics registers the metrics of a run on stream's consumer;
// read reads the consumer at scrape time.
func newConsumeMetrics(stream, consumer string, read func(context.Context) (*positions.Consumer, error), timeout time.Duration) (*consumeMetrics, error) {
	labels := prometheus.Labels{"stream": Escape(stream), "consumer": Escape(consumer)}
	m := &consumeMetrics{
		reg: prometheus.NewRegistry(),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jsctl_consume_messages_total", ConstLabels: labels,
			Help: "Deliveries handled, by outcome (processed, duplicate, failed, busy, released, dead_lettered), counted as consume's --json summary counts them.",
		}, []string{"outcome"}),
		terminated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "jsctl_consume_terminated_total", ConstLabels: labels,
			Help: "Messages that failed for good in this run (a failed record kept, the message terminated).",
		}),
		leaseLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "jsctl_consume_lease_lost_total", ConstLabels: labels,
			Help: "Deliveries whose claim was lost while the handler ran.",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "jsctl_consume_handler_duration_seconds", ConstLabels: labels, Buckets: handlerBuckets,
			Help: "How long each run of the handler took (one per message, or one per batch with --batch).",
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "jsctl_consume_in_flight", ConstLabels: labels,
			Help: "Handlers running now.",
		}),
		lastDone: &lastDone{desc: prometheus.NewDesc("jsctl_consume_last_done_timestamp_seconds",
			"When a message was last done (processed, or acked as a duplicate), in Unix seconds; absent until one is.", nil, labels)},
	}
	for _, o := range consumeOutcomes {
		m.messages.WithLabelValues(o)
	}
	cs := []prometheus.Collector{
		m.messages, m.terminated, m.leaseLost, m.duration, m.inFlight, m.lastDone,
		consumerCollector{
			pending: prometheus.NewDesc("jsctl_consume_consumer_pending", "Messages of the stream the consumer has not delivered yet, read from the server at scrape time.", nil, labels),
			lag:     prometheus.NewDesc("jsctl_consume_ack_floor_lag_seconds", "How far behind real time the consumer's ack floor is, as jsctl consumer check measures it (0 when caught up), read at scrape time.", nil, labels),
			read:    read, timeout: timeout,
		},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	}
	for _, c := range cs {
		if err := m.reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// result counts one result (acks.OnResult).
func (m *consumeMetrics) result(r acks.Result) {
	switch r.Action {
	case acks.Processed:
		m.messages.WithLabelValues("processed").Inc()
		m.done()
	case acks.Duplicate:
		m.messages.WithLabelValues("duplicate").Inc()
		m.done()
	case acks.Failed:
		m.messages.WithLabelValues("failed").Inc()
		if r.Final {
			m.terminated.Inc()
		}
	case acks.Busy:
		m.messages.WithLabelValues("busy").Inc()
	case acks.Released:
		m.messages.WithLabelValues("released").Inc()
	}
	if r.DeadLettered {
		m.messages.WithLabelValues("dead_lettered").Inc()
	}
	if r.LeaseLost {
		m.leaseLost.Inc()
	}
}

// done marks a message done now.
func (m *consumeMetrics) done() { m.lastDone.ns.Store(time.Now().UnixNano()) }

// swept counts the dead letters a sweep published (acks.OnSweep).
func (m *consumeMetrics) swept(n int) {
	m.messages.WithLabelValues("dead_lettered").Add(float64(n))
}

// handlerStarted counts a handler run in flight; the returned function
// ends it, observing its duration.
func (m *consumeMetrics) handlerStarted() func() {
	start := time.Now()
	m.inFlight.Inc()
	return func() {
		m.inFlight.Dec()
		m.duration.Observe(time.Since(start).Seconds())
	}
}

// lastDone is the time a message was last done; it is given only once
// one was (before, the time is not known, not 1970).
type lastDone struct {
	desc *prometheus.Desc
	ns   atomic.Int64
}

func (l *lastDone) Describe(ch chan<- *prometheus.Desc) { ch <- l.desc }

func (l *lastDone) Collect(ch chan<- prometheus.Metric) {
	if ns := l.ns.Load(); ns > 0 {
		ch <- prometheus.MustNewConstMetric(l.desc, prometheus.GaugeValue, float64(ns)/1e9)
	}
}

// consumerCollector reads the consumer when /metrics is scraped.
type consumerCollector struct {
	pending, lag *prometheus.Desc
	read         func(context.Context) (*positions.Consumer, error)
	timeout      time.Duration
}

func (c consumerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pending
	ch <- c.lag
}

func (c consumerCollector) Collect(ch chan<- prometheus.Metric) {
	// Not the run's context: a scrape neither prints waits nor outlives
	// --timeout.
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	pc, err := c.read(ctx)
	if err != nil {
		return // not known now: /healthz says why
	}
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(pc.Info.NumPending))
	ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, time.Duration(pc.LagNS).Seconds())
}
