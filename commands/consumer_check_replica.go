package commands

import (
	"strings"

	"github.com/jsctl/jsctl/jsutil/positions"
)

// perfPrefix is the start of a result's performance labels:
// STREAM.CONSUMER. for a consumer, STREAM.ORIGIN. for a replica's lag
// against an origin (its metrics are named replica_*, which no consumer
// has).
func perfPrefix(r positions.Result) string {
	if r.Origin != "" {
		return nagiosName(r.Stream) + "." + nagiosName(r.Origin) + "."
	}
	return nagiosName(r.Stream) + "." + nagiosName(r.Consumer) + "."
}

// promResultLabels are a sample's labels: stream and consumer, or stream
// and origin for a replica's lag.
func promResultLabels(r positions.Result) string {
	if r.Origin == "" {
		return promLabels(r.Stream, r.Consumer)
	}
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `{stream="` + esc.Replace(Escape(r.Stream)) + `",origin="` + esc.Replace(Escape(r.Origin)) + `"}`
}
