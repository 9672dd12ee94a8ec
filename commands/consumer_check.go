package commands

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/positions"
)

// ConsumerCheckCmd checks consumers against thresholds, as a monitoring
// plugin: Nagios output (or Prometheus text, or JSON) and exit codes
// 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.
type ConsumerCheckCmd struct {
	Stream    string   `arg:"" optional:"" predictor:"stream" help:"Stream of the consumers (or --streams)."`
	Consumers []string `arg:"" optional:"" predictor:"consumer" help:"Consumers to check (or --all)."`
	All       bool     `name:"all" help:"Check every durable consumer of each selected stream."`
	streamsFlag
	Format   string `name:"format" enum:"nagios,prometheus,json" default:"nagios" predictor:"enum" help:"Output: Nagios plugin lines, Prometheus text exposition, or JSON (same as --json) (${enum})."`
	Perfdata string `name:"perfdata" enum:"auto,all,summary,none" default:"auto" predictor:"enum" help:"Nagios performance data on the first line: every consumer's values, a summary (counts and the worst value of each metric), none, or auto: all while the line stays under 4 KB, else the summary (${enum})."`

	LagWarn           *uint64 `name:"lag-warn" placeholder:"N" group:"Thresholds (a value above one raises the status)" help:"Warn above N messages of lag (pending + ack pending)."`
	LagCrit           *uint64 `name:"lag-crit" placeholder:"N" group:"Thresholds (a value above one raises the status)" help:"Critical above N messages of lag."`
	LagTimeWarn       string  `name:"lag-time-warn" placeholder:"DURATION" group:"Thresholds (a value above one raises the status)" help:"Warn when the ack floor is more than DURATION behind real time."`
	LagTimeCrit       string  `name:"lag-time-crit" placeholder:"DURATION" group:"Thresholds (a value above one raises the status)" help:"Critical when the ack floor is more than DURATION behind."`
	AckPendingWarn    *uint64 `name:"ack-pending-warn" placeholder:"N" group:"Thresholds (a value above one raises the status)" help:"Warn above N messages delivered and not acknowledged."`
	AckPendingCrit    *uint64 `name:"ack-pending-crit" placeholder:"N" group:"Thresholds (a value above one raises the status)" help:"Critical above N messages awaiting acknowledgement."`
	RedeliveredWarn   *uint64 `name:"redelivered-warn" placeholder:"N" group:"Thresholds (a value above one raises the status)" help:"Warn above N redelivered messages not yet acknowledged."`
	RedeliveredCrit   *uint64 `name:"redelivered-crit" placeholder:"N" group:"Thresholds (a value above one raises the status)" help:"Critical above N redelivered messages."`
	WaitingWarn       *uint64 `name:"waiting-warn" placeholder:"N" group:"Thresholds (a value above one raises the status)" help:"Warn above N waiting pull requests."`
	WaitingCrit       *uint64 `name:"waiting-crit" placeholder:"N" group:"Thresholds (a value above one raises the status)" help:"Critical above N waiting pull requests."`
	LastDeliveryWarn  string  `name:"last-delivery-warn" placeholder:"DURATION" group:"Thresholds (a value above one raises the status)" help:"Warn when the last delivery is older than DURATION."`
	LastDeliveryCrit  string  `name:"last-delivery-crit" placeholder:"DURATION" group:"Thresholds (a value above one raises the status)" help:"Critical when the last delivery is older than DURATION."`
	LastAckWarn       string  `name:"last-ack-warn" placeholder:"DURATION" group:"Thresholds (a value above one raises the status)" help:"Warn when the last acknowledgement is older than DURATION."`
	LastAckCrit       string  `name:"last-ack-crit" placeholder:"DURATION" group:"Thresholds (a value above one raises the status)" help:"Critical when the last acknowledgement is older than DURATION."`
	PausedWarn        bool    `name:"paused-warn" group:"Thresholds (a value above one raises the status)" help:"Warn when the consumer is paused."`
	PausedCrit        bool    `name:"paused-crit" group:"Thresholds (a value above one raises the status)" help:"Critical when the consumer is paused."`
	FailedRecordsWarn *uint64 `name:"failed-records-warn" placeholder:"N" group:"Thresholds (a value above one raises the status)" help:"Warn above N failed ack records in the consumer's scope (jsctl consume)."`
	FailedRecordsCrit *uint64 `name:"failed-records-crit" placeholder:"N" group:"Thresholds (a value above one raises the status)" help:"Critical above N failed ack records."`
	StaleClaimsWarn   *uint64 `name:"stale-claims-warn" placeholder:"N" group:"Thresholds (a value above one raises the status)" help:"Warn above N claims whose lease ran out."`
	StaleClaimsCrit   *uint64 `name:"stale-claims-crit" placeholder:"N" group:"Thresholds (a value above one raises the status)" help:"Critical above N claims whose lease ran out."`
	ReplicaLagWarn    *uint64 `name:"replica-lag-warn" placeholder:"N" group:"Thresholds (a value above one raises the status)" help:"Warn when the stream mirrors or sources streams and is more than N origin messages behind one of them."`
	ReplicaLagCrit    *uint64 `name:"replica-lag-crit" placeholder:"N" group:"Thresholds (a value above one raises the status)" help:"Critical above N origin messages of replication lag."`
	ReplicaTimeWarn   string  `name:"replica-lag-time-warn" placeholder:"DURATION" group:"Thresholds (a value above one raises the status)" help:"Warn when the oldest origin message the stream has not copied is older than DURATION."`
	ReplicaTimeCrit   string  `name:"replica-lag-time-crit" placeholder:"DURATION" group:"Thresholds (a value above one raises the status)" help:"Critical when the oldest origin message not copied is older than DURATION."`
	AcksBucket        string  `name:"bucket" default:"JSCTL_ACKS" placeholder:"NAME" help:"Ack-record bucket read by --failed-records-* and --stale-claims-*."`
	oldAcksBucketFlag
}

// Help is the long help of consumer check.
func (ConsumerCheckCmd) Help() string {
	return `Checks consumers against thresholds, for Nagios, Icinga, Sensu or Prometheus. Each
threshold has a warning and a critical form; a value above it raises the status.
Only the thresholds given are applied; every measured value is reported.

Output (--format nagios, the default) follows the Nagios plugin format: a first
line with the worst status, a summary naming the worst consumers and the
performance data of every consumer (STREAM.CONSUMER.metric=value[s];warn;crit;min;max,
the label quoted when it must be), then one line per consumer:
  WARNING: 2 consumers on ORDERS: 1 warning (billing), 1 ok | ORDERS.billing.lag=1500;1000;5000;0 ...
  WARNING: ORDERS/billing: lag 1500 > 1000 (warning)
  OK: ORDERS/audit: lag 0 messages (0s)
--format prometheus prints the same values in the Prometheus text format (gauges
named jsctl_consumer_*, labels stream and consumer); --json the full report.

Exit codes follow the monitoring convention, for this command only: 0 OK,
1 WARNING, 2 CRITICAL, 3 UNKNOWN. A named stream or consumer that does not exist
is CRITICAL; a server that cannot be reached, a permission error or a bad command
line is UNKNOWN (3), never 2, and prints an UNKNOWN status line on stdout too.

The first line stays under 4 KB (Nagios keeps about 8 KB of output): past a few
names the consumers are counted, and --perfdata auto (the default) replaces the
per-consumer values with a summary (consumers=N critical=N warning=N unknown=N
and max_METRIC, the worst value of each metric) when all of them would not fit;
--perfdata all, summary or none choose.

Failed ack records and claims whose lease ran out are read from the consumer's
scope (STREAM.CONSUMER) in --bucket only when one of their thresholds is
given: that reads every record of the scope.

--replica-lag-* check a stream that mirrors or sources other streams (on this
cluster or, through the source's domain or API prefix, another): one more result
per origin, labelled STREAM.ORIGIN.replica_lag and .replica_lag_time, with the
origin messages not yet copied and the age of the oldest of them (docs/failover.md).

Examples:
  jsctl consumer check ORDERS billing --lag-warn 1000 --lag-crit 5000
  jsctl consumer check ORDERS --all --lag-time-warn 5m --lag-time-crit 30m --paused-warn
  jsctl consumer check --streams 'ORD*' --all --last-ack-crit 1h --format prometheus
  jsctl consumer check ORDERS billing --failed-records-warn 0 --stale-claims-crit 10 --json
  jsctl consumer check ORDERS_DR --all --replica-lag-warn 1000 --replica-lag-time-crit 5m`
}

// usageExitCode makes a bad command line UNKNOWN (3), as monitoring
// plugins do, rather than the usual 2 (which would read as CRITICAL).
func (*ConsumerCheckCmd) usageExitCode() int { return int(positions.Unknown) }

// usageStatus prints the status line a monitoring system reads for a bad
// command line: it shows the reason instead of an empty status.
func (*ConsumerCheckCmd) usageStatus(stdout io.Writer, err error) {
	fmt.Fprintf(stdout, "UNKNOWN: %s\n", nagiosText(err.Error()))
}

// Validate checks the selection and the thresholds.
func (c *ConsumerCheckCmd) Validate() error {
	if err := c.selection(c.Stream, c.Consumers, c.All).Validate(); err != nil {
		return err
	}
	_, err := c.thresholds()
	return err
}

// thresholds reads the threshold flags.
func (c *ConsumerCheckCmd) thresholds() (positions.Thresholds, error) {
	var th positions.Thresholds
	var firstErr error
	count := func(name string, warn, crit *uint64) positions.Limit {
		var l positions.Limit
		if warn != nil {
			v := float64(*warn)
			l.Warn = &v
		}
		if crit != nil {
			v := float64(*crit)
			l.Crit = &v
		}
		if l.Warn != nil && l.Crit != nil && *l.Warn > *l.Crit && firstErr == nil {
			firstErr = jsutil.Errorf(jsutil.ErrBadInput, "--%s-warn %d is above --%s-crit %d: the warning threshold must not exceed the critical one", name, *warn, name, *crit)
		}
		return l
	}
	duration := func(name, warn, crit string) positions.Limit {
		var l positions.Limit
		for _, f := range []struct {
			flag, val string
			dst       **float64
		}{{name + "-warn", warn, &l.Warn}, {name + "-crit", crit, &l.Crit}} {
			if f.val == "" {
				continue
			}
			d, err := jsutil.ParseDuration(f.val)
			if err == nil && d < 0 {
				err = jsutil.Errorf(jsutil.ErrBadInput, "--%s wants a positive duration, got %s", f.flag, f.val)
			}
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("--%s: %w", f.flag, err)
				}
				continue
			}
			v := d.Seconds()
			*f.dst = &v
		}
		if l.Warn != nil && l.Crit != nil && *l.Warn > *l.Crit && firstErr == nil {
			firstErr = jsutil.Errorf(jsutil.ErrBadInput, "--%s-warn %s is above --%s-crit %s: the warning threshold must not exceed the critical one", name, warn, name, crit)
		}
		return l
	}
	th.Lag = count("lag", c.LagWarn, c.LagCrit)
	th.LagTime = duration("lag-time", c.LagTimeWarn, c.LagTimeCrit)
	th.AckPending = count("ack-pending", c.AckPendingWarn, c.AckPendingCrit)
	th.Redelivered = count("redelivered", c.RedeliveredWarn, c.RedeliveredCrit)
	th.Waiting = count("waiting", c.WaitingWarn, c.WaitingCrit)
	th.LastDelivery = duration("last-delivery", c.LastDeliveryWarn, c.LastDeliveryCrit)
	th.LastAck = duration("last-ack", c.LastAckWarn, c.LastAckCrit)
	th.FailedRecords = count("failed-records", c.FailedRecordsWarn, c.FailedRecordsCrit)
	th.StaleClaims = count("stale-claims", c.StaleClaimsWarn, c.StaleClaimsCrit)
	th.ReplicaLag = count("replica-lag", c.ReplicaLagWarn, c.ReplicaLagCrit)
	th.ReplicaLagTime = duration("replica-lag-time", c.ReplicaTimeWarn, c.ReplicaTimeCrit)
	switch {
	case c.PausedCrit:
		th.Paused = positions.Critical
	case c.PausedWarn:
		th.Paused = positions.Warning
	}
	return th, firstErr
}

// Run checks the consumers and exits with the status's code.
func (c *ConsumerCheckCmd) Run(ctx context.Context, env *Env) error {
	p, err := env.Printer()
	if err != nil {
		return &ExitStatus{Code: int(positions.Unknown), Err: err}
	}
	format := c.Format
	if p.JSON {
		if format == "prometheus" {
			return &ExitStatus{Code: int(positions.Unknown), Err: jsutil.Errorf(jsutil.ErrBadInput, "--json and --format prometheus cannot be used together")}
		}
		format = "json"
	}
	// A direct get refused and read by message get instead is not said on
	// stderr: the check's output is its stdout and its exit code.
	ctx = jsutil.WithRefusals(ctx, nil)
	rep, err := c.check(ctx, env)
	if err != nil {
		switch format {
		case "nagios":
			p.Printf("UNKNOWN: %s\n", nagiosText(err.Error()))
		case "json":
			_ = p.PrintJSON(map[string]string{"status": positions.Unknown.String(), "error": err.Error()})
		}
		return &ExitStatus{Code: int(positions.Unknown), Err: err}
	}
	switch format {
	case "json":
		err = p.PrintJSON(rep)
	case "prometheus":
		printPrometheus(p, rep)
	default:
		printNagios(p, rep, c.selection(c.Stream, c.Consumers, c.All), c.Perfdata)
	}
	if err != nil {
		return &ExitStatus{Code: int(positions.Unknown), Err: err}
	}
	if rep.Status == positions.OK {
		return nil
	}
	return &ExitStatus{Code: int(rep.Status)}
}

func (c *ConsumerCheckCmd) check(ctx context.Context, env *Env) (*positions.Report, error) {
	th, err := c.thresholds()
	if err != nil {
		return nil, err
	}
	cl, err := env.Client(ctx)
	if err != nil {
		return nil, err
	}
	return positions.Check(ctx, cl.JS, c.selection(c.Stream, c.Consumers, c.All), th, positionsOptions(env, deprecatedFlag(env, "--acks-bucket", "--bucket", c.OldAcksBucket, c.AcksBucket)))
}

// nagiosFirstLineMax bounds the first line of the Nagios output: Nagios
// keeps about 8 KB of plugin output, and the first line must leave room.
const nagiosFirstLineMax = 4000

// printNagios writes the report in the Nagios plugin format: the status
// line with the performance data (see --perfdata), then one line per
// consumer.
func printNagios(p *Printer, rep *positions.Report, sel positions.Selection, perfdata string) {
	line := rep.Status.String() + ": " + nagiosText(checkSummary(rep, sel, nagiosFirstLineMax/2))
	all := nagiosPerfAll(rep)
	switch perfdata {
	case "all":
		line = joinPerf(line, all)
	case "summary":
		line = joinPerf(line, nagiosPerfSummary(rep))
	case "none":
	default: // auto
		if l := joinPerf(line, all); len(l) <= nagiosFirstLineMax {
			line = l
		} else {
			line = joinPerf(line, nagiosPerfSummary(rep))
		}
	}
	p.Printf("%s\n", line)
	for _, r := range rep.Results {
		who := nagiosName(r.Stream)
		if r.Consumer != "" {
			who += "/" + nagiosName(r.Consumer)
		}
		// No '|' in these lines: after the first line, a '|' starts
		// performance data for the rest of the output.
		p.Printf("%s: %s: %s\n", r.Status, who, nagiosText(r.Summary()))
	}
}

func joinPerf(line string, perf []string) string {
	if len(perf) == 0 {
		return line
	}
	return line + " | " + strings.Join(perf, " ")
}

// nagiosPerfAll is every consumer's performance data.
func nagiosPerfAll(rep *positions.Report) []string {
	var perf []string
	for _, r := range rep.Results {
		for _, m := range r.Metrics {
			perf = append(perf, nagiosPerf(perfPrefix(r)+m.Name, m))
		}
	}
	return perf
}

// nagiosPerfSummary is the counts by status and, per metric, the worst
// (highest) value of any consumer with the thresholds that apply to all.
func nagiosPerfSummary(rep *positions.Report) []string {
	perf := []string{
		fmt.Sprintf("consumers=%d", len(rep.Results)),
		fmt.Sprintf("critical=%d", rep.Counts.Critical),
		fmt.Sprintf("warning=%d", rep.Counts.Warning),
		fmt.Sprintf("unknown=%d", rep.Counts.Unknown),
	}
	worst := map[string]positions.Metric{}
	var order []string
	for _, r := range rep.Results {
		for _, m := range r.Metrics {
			w, seen := worst[m.Name]
			if !seen {
				order = append(order, m.Name)
			}
			if !seen || w.Unknown || (!m.Unknown && m.Value > w.Value) {
				worst[m.Name] = m
			}
		}
	}
	for _, name := range order {
		perf = append(perf, nagiosPerf("max_"+name, worst[name]))
	}
	return perf
}

// checkSummary is the first line's text: how many consumers on which
// streams, by status, naming the worst ones (at most max bytes of names;
// the rest are counted).
func checkSummary(rep *positions.Report, sel positions.Selection, max int) string {
	streams := make([]string, len(rep.Streams))
	for i, st := range rep.Streams {
		streams[i] = nagiosName(st)
	}
	where := "on " + strings.Join(streams, ", ")
	switch {
	case len(rep.Streams) == 0:
		return "no streams match " + Escape(strings.Join(sel.Streams, ", "))
	case len(rep.Streams) > 3 || len(where) > max/4:
		where = fmt.Sprintf("on %d streams", len(rep.Streams))
	}
	var consumers, streamProblems []positions.Result
	for _, r := range rep.Results {
		if r.Consumer == "" {
			streamProblems = append(streamProblems, r)
		} else {
			consumers = append(consumers, r)
		}
	}
	var out []string
	for _, r := range streamProblems { // a stream that could not be read
		out = append(out, fmt.Sprintf("stream %s %s: %s", nagiosName(r.Stream), strings.ToLower(r.Status.String()), r.Summary()))
	}
	if len(consumers) == 0 {
		if len(out) == 0 {
			return "no durable consumers " + where
		}
		return strings.Join(out, "; ")
	}
	budget := max
	var parts []string
	for _, c := range []struct {
		st   positions.Status
		n    int
		word string
	}{{positions.Critical, rep.Counts.Critical, "critical"}, {positions.Warning, rep.Counts.Warning, "warning"}, {positions.Unknown, rep.Counts.Unknown, "unknown"}, {positions.OK, rep.Counts.OK, "ok"}} {
		n := 0
		for _, r := range consumers {
			if r.Status == c.st {
				n++
			}
		}
		if n == 0 {
			continue
		}
		part := fmt.Sprintf("%d %s", n, c.word)
		if c.st != positions.OK {
			part += " (" + nameWorst(consumers, c.st, len(rep.Streams) > 1, &budget) + ")"
		}
		parts = append(parts, part)
	}
	out = append([]string{fmt.Sprintf("%s %s: %s", plural(len(consumers), "consumer", "consumers"), where, strings.Join(parts, ", "))}, out...)
	return strings.Join(out, "; ")
}

// nameWorst names the consumers of one status while budget lasts, and
// counts the rest.
func nameWorst(rs []positions.Result, st positions.Status, withStream bool, budget *int) string {
	var names []string
	more := 0
	for _, r := range rs {
		if r.Status != st {
			continue
		}
		n := nagiosName(r.Consumer)
		if withStream {
			n = nagiosName(r.Stream) + "/" + n
		}
		if len(n)+2 > *budget {
			more++
			continue
		}
		*budget -= len(n) + 2
		names = append(names, n)
	}
	if more > 0 {
		names = append(names, fmt.Sprintf("%d more", more))
	}
	return strings.Join(names, ", ")
}

// nagiosPerf writes one performance value: 'label'=value[UOM];warn;crit;min;max
// (trailing empty fields left out).
func nagiosPerf(label string, m positions.Metric) string {
	value := perfNumber(m.Value, m.Unit) + m.Unit
	if m.Unknown {
		value = "U" // the plugin guidelines' value that could not be determined
	}
	fields := []string{value, perfLimit(m.Warn), perfLimit(m.Crit), "0", ""}
	if m.Name == positions.MetricPaused {
		fields[4] = "1"
	}
	return nagiosLabel(label) + "=" + strings.TrimRight(strings.Join(fields, ";"), ";")
}

// nagiosLabel quotes a label when it holds characters other than letters,
// digits and _.:/- (a quote inside is doubled). '=' is not allowed in a
// label at all: it is written \u003d, as nagiosName writes '|', so labels
// stay unique (the names in it are escaped, so a backslash in it always
// starts an escape and the label reads back exactly).
func nagiosLabel(s string) string {
	s = strings.ReplaceAll(s, "=", `\u003d`)
	plain := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_.:/-", r)) {
			plain = false
		}
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

func perfNumber(v float64, unit string) string {
	if unit == "s" {
		v = math.Round(v*1000) / 1000
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func perfLimit(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

// printPrometheus writes the report in the Prometheus text exposition
// format: one gauge per metric, labelled with stream and consumer.
func printPrometheus(p *Printer, rep *positions.Report) {
	p.Printf("# HELP jsctl_consumer_check_status Result of jsctl consumer check: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.\n")
	p.Printf("# TYPE jsctl_consumer_check_status gauge\n")
	for _, r := range rep.Results {
		p.Printf("jsctl_consumer_check_status%s %d\n", promResultLabels(r), int(r.Status))
	}
	for _, info := range positions.Metrics() {
		name := promName(info.Name)
		first := true
		for _, r := range rep.Results {
			for _, m := range r.Metrics {
				if m.Name != info.Name || m.Unknown {
					continue // an unknown value has no sample: its result's status says UNKNOWN
				}
				if first {
					p.Printf("# HELP %s %s\n# TYPE %s gauge\n", name, info.Help, name)
					first = false
				}
				p.Printf("%s%s %s\n", name, promResultLabels(r), perfNumber(m.Value, m.Unit))
			}
		}
	}
}

// promName is a metric's Prometheus name, with its base unit.
func promName(metric string) string {
	switch metric {
	case positions.MetricLag:
		return "jsctl_consumer_lag_messages"
	case positions.MetricLagTime:
		return "jsctl_consumer_lag_seconds"
	case positions.MetricAckPending:
		return "jsctl_consumer_ack_pending_messages"
	case positions.MetricRedelivered:
		return "jsctl_consumer_redelivered_messages"
	case positions.MetricWaiting:
		return "jsctl_consumer_waiting_pulls"
	case positions.MetricLastDelivery:
		return "jsctl_consumer_last_delivery_age_seconds"
	case positions.MetricLastAck:
		return "jsctl_consumer_last_ack_age_seconds"
	case positions.MetricFailedRecords:
		return "jsctl_consumer_failed_ack_records"
	case positions.MetricStaleClaims:
		return "jsctl_consumer_stale_ack_claims"
	case positions.MetricReplicaLag:
		return "jsctl_stream_replica_lag_messages"
	case positions.MetricReplicaLagTime:
		return "jsctl_stream_replica_lag_seconds"
	}
	return "jsctl_consumer_" + metric
}

// promLabels are the stream and consumer labels of a sample: each name
// escaped as Escape does (so a label value is valid UTF-8 without control
// characters, and reads as consumer ls prints the name), then escaped for
// the text format.
func promLabels(stream, consumer string) string {
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `{stream="` + esc.Replace(Escape(stream)) + `",consumer="` + esc.Replace(Escape(consumer)) + `"}`
}
