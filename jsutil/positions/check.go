package positions

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Status is a check result in the monitoring convention; its value is the
// exit code a monitoring plugin uses for it.
type Status int

// Statuses, from best to worst.
const (
	OK       Status = 0
	Warning  Status = 1
	Critical Status = 2
	Unknown  Status = 3
)

func (s Status) String() string {
	switch s {
	case OK:
		return "OK"
	case Warning:
		return "WARNING"
	case Critical:
		return "CRITICAL"
	}
	return "UNKNOWN"
}

// MarshalJSON writes the status word.
func (s Status) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// Limit is a warning and a critical threshold; nil means not set. A value
// above a threshold (strictly greater) raises that status.
type Limit struct {
	Warn *float64
	Crit *float64
}

func (l Limit) set() bool { return l.Warn != nil || l.Crit != nil }

// Thresholds are the limits Check applies. Counts are numbers of messages,
// requests or records; times are in seconds.
type Thresholds struct {
	Lag           Limit // pending + ack pending
	LagTime       Limit // age of the oldest message the consumer can still receive
	AckPending    Limit
	Redelivered   Limit
	Waiting       Limit // waiting pull requests
	LastDelivery  Limit // time since the last delivery
	LastAck       Limit // time since the last acknowledgement
	FailedRecords Limit // failed ack records of the consumer's scope
	StaleClaims   Limit // claims whose lease ran out
	// ReplicaLag and ReplicaLagTime check a mirror's or sourcing stream's
	// replication lag against each origin it copies (replica.go).
	ReplicaLag     Limit
	ReplicaLagTime Limit
	// Paused is the status of a paused consumer: Warning or Critical, or
	// OK to accept it.
	Paused Status
}

// needsAcks reports whether a threshold asks for the ack-record counts.
func (t Thresholds) needsAcks() bool { return t.FailedRecords.set() || t.StaleClaims.set() }

// Metric names, in the order Check reports them.
const (
	MetricLag           = "lag"
	MetricLagTime       = "lag_time"
	MetricAckPending    = "ack_pending"
	MetricRedelivered   = "redelivered"
	MetricWaiting       = "waiting"
	MetricLastDelivery  = "last_delivery"
	MetricLastAck       = "last_ack"
	MetricPaused        = "paused"
	MetricFailedRecords = "failed_records"
	MetricStaleClaims   = "stale_claims"
	// Replica metrics (of a stream, per origin; replica.go).
	MetricReplicaLag     = "replica_lag"
	MetricReplicaLagTime = "replica_lag_time"
)

// MetricInfo describes one metric: its name, its unit ("s" for seconds,
// "" for a count) and what it measures.
type MetricInfo struct {
	Name string
	Unit string
	Help string
}

// Metrics describes every metric Check can report, in order.
func Metrics() []MetricInfo {
	return []MetricInfo{
		{MetricLag, "", "Messages the consumer has not had acknowledged: pending plus ack pending."},
		{MetricLagTime, "s", "Age of the oldest message the consumer can still receive: the first one above its ack floor on its filter subjects (0 when caught up)."},
		{MetricAckPending, "", "Messages delivered and not yet acknowledged."},
		{MetricRedelivered, "", "Messages delivered more than once and not yet acknowledged."},
		{MetricWaiting, "", "Pull requests waiting for messages."},
		{MetricLastDelivery, "s", "Time since the consumer last delivered a message (since its creation when it never did)."},
		{MetricLastAck, "s", "Time since the consumer last had a message acknowledged (since its creation when it never did)."},
		{MetricPaused, "", "1 when the consumer is paused, else 0."},
		{MetricFailedRecords, "", "Failed ack records in the consumer's scope (jsctl consume)."},
		{MetricStaleClaims, "", "Claims in the consumer's scope whose lease ran out without being renewed."},
		{MetricReplicaLag, "", "Origin messages a mirror or sourcing stream has not copied yet: from the first one not copied to the origin's last."},
		{MetricReplicaLagTime, "s", "Age of the oldest origin message a mirror or sourcing stream has not copied yet (0 when caught up)."},
	}
}

// Metric is one measured value with the thresholds applied to it.
type Metric struct {
	Name   string   `json:"name"`
	Value  float64  `json:"value"`
	Unit   string   `json:"unit,omitempty"`
	Warn   *float64 `json:"warn,omitempty"`
	Crit   *float64 `json:"crit,omitempty"`
	Status Status   `json:"status"`
	// Unknown marks a value that could not be measured (a read refused or
	// unanswered): Value is 0 and means nothing; JSON writes it as null,
	// Nagios performance data as U, and Prometheus leaves the sample out.
	Unknown bool `json:"-"`
}

// MarshalJSON writes an unknown value as null.
func (m Metric) MarshalJSON() ([]byte, error) {
	type plain Metric
	out := struct {
		plain
		Value *float64 `json:"value"`
	}{plain: plain(m)}
	if !m.Unknown {
		out.Value = &m.Value
	}
	return json.Marshal(out)
}

// Result is the check of one consumer (or of a stream that could not be
// read, with Consumer empty).
type Result struct {
	Stream   string `json:"stream"`
	Consumer string `json:"consumer"`
	Status   Status `json:"status"`
	// Problems say what raised the status, one phrase each.
	Problems []string `json:"problems"`
	Metrics  []Metric `json:"metrics"`
	// AckRecords is the consumer's scope, when a threshold needed it.
	AckRecords *AckRecords `json:"ack_records,omitempty"`
	// Origin is set on a stream's replication-lag result (Consumer is
	// empty): the origin stream it copies.
	Origin string `json:"origin,omitempty"`
}

// Counts counts results by status.
type Counts struct {
	OK       int `json:"ok"`
	Warning  int `json:"warning"`
	Critical int `json:"critical"`
	Unknown  int `json:"unknown"`
}

// Report is the outcome of Check.
type Report struct {
	// Status is the worst status of any result (OK when there is none).
	Status  Status   `json:"status"`
	Streams []string `json:"streams"`
	Counts  Counts   `json:"counts"`
	Results []Result `json:"consumers"`
}

// Check reads the selected consumers and applies th. A stream or consumer
// that was named and does not exist is a Critical result; any other error
// (connection, permission) stops the check and is returned.
func Check(ctx context.Context, js jetstream.JetStream, sel Selection, th Thresholds, opts Options) (*Report, error) {
	opts = opts.withDefaults()
	groups, err := selectGroups(ctx, js, sel, opts)
	if err != nil {
		return nil, err
	}
	rep := &Report{Streams: []string{}, Results: []Result{}}
	ar := newAckReader(js, opts.AcksBucket)
	for _, g := range groups {
		rep.Streams = append(rep.Streams, g.stream)
		if g.err != nil {
			rep.add(Result{Stream: g.stream, Status: Critical, Problems: []string{"stream not found"}, Metrics: []Metric{}})
			continue
		}
		for _, name := range g.consumers {
			c, err := g.r.consumer(ctx, name)
			if isNotFound(err) {
				rep.add(Result{Stream: g.stream, Consumer: name, Status: Critical, Problems: []string{"consumer not found"}, Metrics: []Metric{}})
				continue
			}
			if err != nil {
				return nil, err
			}
			res := Result{Stream: g.stream, Consumer: name, Problems: []string{}}
			if th.needsAcks() {
				rec, err := ar.scope(ctx, g.stream, name, th.StaleClaims.set(), opts.Now())
				if err != nil {
					return nil, fmt.Errorf("check consumer %q on %q: %w", name, g.stream, err)
				}
				res.AckRecords = rec
			}
			res.evaluate(c, th, opts.Now())
			rep.add(res)
		}
		if th.replicaSet() {
			for _, res := range checkReplica(ctx, js, g.stream, th) {
				rep.add(res)
			}
		}
	}
	return rep, nil
}

func (r *Report) add(res Result) {
	r.Results = append(r.Results, res)
	r.Status = max(r.Status, res.Status)
	switch res.Status {
	case OK:
		r.Counts.OK++
	case Warning:
		r.Counts.Warning++
	case Critical:
		r.Counts.Critical++
	default:
		r.Counts.Unknown++
	}
}

// evaluate measures c and applies th.
func (r *Result) evaluate(c *Consumer, th Thresholds, now time.Time) {
	info := c.Info
	since := func(t *time.Time) float64 {
		ref := info.Created
		if t != nil && !t.IsZero() {
			ref = *t
		}
		if !now.After(ref) {
			return 0
		}
		return now.Sub(ref).Seconds()
	}
	paused := 0.0
	if info.Paused {
		paused = 1
	}
	r.measure(MetricLag, float64(c.LagMessages), th.Lag)
	if c.LagKnown {
		r.measure(MetricLagTime, time.Duration(c.LagNS).Seconds(), th.LagTime)
	} else {
		r.unknown(MetricLagTime, c.unknownReason("lag_ns"), th.LagTime)
	}
	r.measure(MetricAckPending, float64(info.NumAckPending), th.AckPending)
	r.measure(MetricRedelivered, float64(info.NumRedelivered), th.Redelivered)
	r.measure(MetricWaiting, float64(info.NumWaiting), th.Waiting)
	r.measure(MetricLastDelivery, since(info.Delivered.Last), th.LastDelivery)
	r.measure(MetricLastAck, since(info.AckFloor.Last), th.LastAck)
	r.measure(MetricPaused, paused, Limit{})
	if info.Paused && th.Paused > OK {
		r.Metrics[len(r.Metrics)-1].Status = th.Paused
		r.raise(th.Paused, "paused")
	}
	if th.needsAcks() {
		var failed, stale int
		var unreadable []string
		if r.AckRecords != nil {
			failed, stale, unreadable = r.AckRecords.Failed, r.AckRecords.StaleClaims, r.AckRecords.Unreadable
		}
		if len(unreadable) > 0 {
			// A record that does not read could be a failed record or a
			// claim: the counts are not known (UNKNOWN with a threshold
			// on them), and the line names every such record by key.
			why := fmt.Sprintf("%d ack records of scope %s do not read (jsctl acks forget removes them): %s", len(unreadable), r.AckRecords.Scope, listSome(unreadable, 5))
			r.unknown(MetricFailedRecords, why, th.FailedRecords)
			if th.StaleClaims.set() {
				r.unknown(MetricStaleClaims, why, th.StaleClaims)
			}
		} else {
			r.measure(MetricFailedRecords, float64(failed), th.FailedRecords)
			if th.StaleClaims.set() {
				r.measure(MetricStaleClaims, float64(stale), th.StaleClaims)
			}
		}
	}
}

// measure records a metric and raises the status when it is above a
// threshold.
func (r *Result) measure(name string, v float64, l Limit) {
	m := Metric{Name: name, Value: v, Unit: unitOf(name), Warn: l.Warn, Crit: l.Crit}
	switch {
	case l.Crit != nil && v > *l.Crit:
		m.Status = Critical
		r.raise(Critical, fmt.Sprintf("%s > %s", describe(name, v), formatValue(m.Unit, *l.Crit)))
	case l.Warn != nil && v > *l.Warn:
		m.Status = Warning
		r.raise(Warning, fmt.Sprintf("%s > %s", describe(name, v), formatValue(m.Unit, *l.Warn)))
	}
	r.Metrics = append(r.Metrics, m)
}

// unknown records a metric that could not be measured: with a threshold
// on it the result is UNKNOWN, naming why (the refused subject); without
// one it is reported unknown and the status stays what the others make it.
func (r *Result) unknown(name, reason string, l Limit) {
	m := Metric{Name: name, Unit: unitOf(name), Warn: l.Warn, Crit: l.Crit, Unknown: true}
	if l.set() {
		m.Status = Unknown
		r.raise(Unknown, strings.ReplaceAll(name, "_", " ")+" unknown: "+reason)
	}
	r.Metrics = append(r.Metrics, m)
}

func (r *Result) raise(s Status, problem string) {
	r.Status = max(r.Status, s)
	r.Problems = append(r.Problems, problem+" ("+strings.ToLower(s.String())+")")
}

func unitOf(name string) string {
	for _, m := range Metrics() {
		if m.Name == name {
			return m.Unit
		}
	}
	return ""
}

// describe words a metric's value for people: "lag 1500", "last ack 2h0m0s ago".
func describe(name string, v float64) string {
	words := strings.ReplaceAll(name, "_", " ")
	switch name {
	case MetricWaiting:
		words = "waiting pulls"
	case MetricLastDelivery, MetricLastAck:
		return words + " " + formatValue("s", v) + " ago"
	}
	return words + " " + formatValue(unitOf(name), v)
}

// formatValue writes a count as an integer and seconds as a duration.
func formatValue(unit string, v float64) string {
	if unit == "s" {
		return time.Duration(v * float64(time.Second)).Round(time.Millisecond).String()
	}
	return fmt.Sprintf("%.0f", v)
}

// Summary is a short description of a result for people: its problems, or
// the lag when there are none.
func (r *Result) Summary() string {
	s := r.summary()
	if r.AckRecords != nil && len(r.AckRecords.Ignored) > 0 {
		// Records of an earlier stream of the name are not counted; the
		// text says so (the JSON has them in ack_records.ignored).
		s += "; warning: " + strings.Join(r.AckRecords.Ignored, "; warning: ")
	}
	return s
}

func (r *Result) summary() string {
	if len(r.Problems) > 0 {
		return strings.Join(r.Problems, ", ")
	}
	if r.Origin != "" {
		return r.replicaSummary()
	}
	var lag float64
	lagTime := "lag time unknown"
	for _, m := range r.Metrics {
		switch {
		case m.Name == MetricLag:
			lag = m.Value
		case m.Name == MetricLagTime && !m.Unknown:
			lagTime = formatValue("s", m.Value)
		}
	}
	return fmt.Sprintf("lag %s messages (%s)", formatValue("", lag), lagTime)
}

// listSome joins the first n of list, counting the rest.
func listSome(list []string, n int) string {
	if len(list) <= n {
		return strings.Join(list, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(list[:n], "; "), len(list)-n)
}
