package positions

import (
	"context"
	"fmt"
	"time"

	"github.com/jsctl/jsctl/jsutil/replica"
	"github.com/nats-io/nats.go/jetstream"
)

func (t Thresholds) replicaSet() bool { return t.ReplicaLag.set() || t.ReplicaLagTime.set() }

// checkReplica measures the replication lag of stream against every origin
// it mirrors or sources (one result each, Consumer empty, Origin set). An
// origin in another domain or account is reached through the source's
// external API prefix on the same connection, as the server reaches it. A
// stream that copies nothing, or whose origin cannot be read, is UNKNOWN.
func checkReplica(ctx context.Context, js jetstream.JetStream, stream string, th Thresholds) []Result {
	unknown := func(origin, problem string) []Result {
		return []Result{{Stream: stream, Origin: origin, Status: Unknown, Problems: []string{problem}, Metrics: []Metric{}}}
	}
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return unknown("", "replication lag: "+err.Error())
	}
	cfg := s.CachedInfo().Config
	var origins []*jetstream.StreamSource
	if cfg.Mirror != nil {
		origins = append(origins, cfg.Mirror)
	}
	seen := map[string]bool{}
	for _, src := range cfg.Sources {
		if src == nil {
			continue
		}
		key := src.Name
		if src.External != nil {
			key += " " + src.External.APIPrefix
		}
		if !seen[key] {
			seen[key] = true
			origins = append(origins, src)
		}
	}
	if len(origins) == 0 {
		return unknown("", "replication lag: the stream neither mirrors nor sources another stream")
	}
	var out []Result
	for _, o := range origins {
		ojs := js
		if o.External != nil && o.External.APIPrefix != "" {
			if ojs, err = jetstream.NewWithAPIPrefix(js.Conn(), o.External.APIPrefix); err != nil {
				out = append(out, unknown(o.Name, "replication lag: "+err.Error())...)
				continue
			}
		}
		lag, err := replica.ReplicaLag(ctx, replica.Side{JS: ojs, Stream: o.Name}, replica.Side{JS: js, Stream: stream})
		if err != nil {
			out = append(out, unknown(o.Name, fmt.Sprintf("replication lag against %q: %v", o.Name, err))...)
			continue
		}
		r := Result{Stream: stream, Origin: o.Name, Problems: []string{}}
		r.measure(MetricReplicaLag, float64(lag.Messages), th.ReplicaLag)
		r.measure(MetricReplicaLagTime, lag.Age.Seconds(), th.ReplicaLagTime)
		for i, p := range r.Problems {
			r.Problems[i] = "replica of " + o.Name + ": " + p
		}
		out = append(out, r)
	}
	return out
}

// replicaSummary describes a replication-lag result without problems.
func (r *Result) replicaSummary() string {
	var n, age float64
	for _, m := range r.Metrics {
		switch m.Name {
		case MetricReplicaLag:
			n = m.Value
		case MetricReplicaLagTime:
			age = m.Value
		}
	}
	return fmt.Sprintf("replica of %s: %s messages behind (%s)", r.Origin, formatValue("", n), time.Duration(age*float64(time.Second)).Round(time.Millisecond))
}
