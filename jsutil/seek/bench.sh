#!/bin/sh
# Runs BenchmarkSeek (a stream of 1,000,000 messages by default; the server
# runs in a child process, so B/op and allocs/op are the client's) and
# prints a table of latency, requests, client memory and the ratio of each
# approach's latency to the server strategy's.
#
#   jsutil/seek/bench.sh                      # 1M messages, 2000 seeks each
#   MSGS=100000 BENCHTIME=500x jsutil/seek/bench.sh
set -eu
cd "$(dirname "$0")/../.."
if ! out=$(go test ./jsutil/seek -run '^$' -bench '^BenchmarkSeek$' -benchtime "${BENCHTIME:-2000x}" \
	-timeout 60m -seek.benchmsgs "${MSGS:-1000000}" -v 2>&1); then
	printf '%s\n' "$out" >&2
	exit 1
fi
printf '%s\n' "$out" | grep -E 'built a stream|ns/op' || true
echo
printf '%s\n' "$out" | awk '
/^BenchmarkSeek\/.*ns\/op/ {
	name = $1; sub(/^BenchmarkSeek\//, "", name); sub(/-[0-9]+$/, "", name)
	for (i = 2; i < NF; i++) {
		if ($(i+1) == "ns/op") ns[name] = $i
		if ($(i+1) == "B/op") bytes[name] = $i
		if ($(i+1) == "allocs/op") allocs[name] = $i
		if ($(i+1) == "requests/op") reqs[name] = $i
	}
	order[++n] = name
}
END {
	if (!("server" in ns)) { print "no benchmark results" > "/dev/stderr"; exit 1 }
	printf "%-26s %12s %12s %10s %10s %14s\n", "approach", "latency", "requests/op", "B/op", "allocs/op", "x server"
	for (i = 1; i <= n; i++) {
		k = order[i]
		printf "%-26s %10.1fµs %12.2f %10d %10d %13.1fx\n", k, ns[k] / 1000, reqs[k], bytes[k], allocs[k], ns[k] / ns["server"]
	}
}'
