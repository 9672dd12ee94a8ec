#!/bin/sh
# Runs the benchmarks against a separate nats-server process (built from
# the pinned module by internal/natsproc) and prints one table: the library
# with ack records at 1 and 16 workers against two plain nats.go consumers
# that double-ack each message without records (one fetching a message per
# worker at a time, one prefetching with nats.go's default pull buffer),
# with the ratios, the server's inbound messages per processed message (its
# /varz in_msgs before and after) and the CPU time per message of the
# client and of the server; then jsctl consume with --exec per message and
# with --batch 100, and jsctl's peak memory after 10,000 and 1,000,000
# messages. Each figure is the median of ROUNDS interleaved runs.
#
#   jsutil/acks/bench.sh                               # 3 rounds
#   ROUNDS=1 LIBMSGS=5000 CLIMSGS=2000 MEMMSGS=10000,100000 jsutil/acks/bench.sh
#   CLI=0 jsutil/acks/bench.sh                         # the library only
#   BASE=<commit> CLI=0 jsutil/acks/bench.sh           # and the library at <commit>
#   PROFILE=1 ROUNDS=1 CLI=0 jsutil/acks/bench.sh      # and the server's CPU split
#
# With PROFILE=1, one more pass of the library benchmark runs with the
# server's profiling port open and a CPU profile of the server over each run
# (PROFSECS seconds, default 15: a run must end within it), and a second
# table splits the server's CPU per message by function family
# (jsutil/acks/profsplit.awk says which functions go where).
# With BASE, the library benchmark of this tree also runs on the library
# of that commit, interleaved, and the table gains its rows ("before").
set -eu
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/jsctl" ./cmd/jsctl
go test -c -o "$tmp/acks.test" ./jsutil/acks
if [ -n "${BASE:-}" ]; then
	mkdir "$tmp/base"
	git archive "$BASE" | tar -x -C "$tmp/base"
	cp jsutil/acks/bench_process_test.go "$tmp/base/jsutil/acks/"
	(cd "$tmp/base" && go test -c -o "$tmp/base.test" ./jsutil/acks)
fi
rounds=${ROUNDS:-3}
i=0
while [ "$i" -lt "$rounds" ]; do
	i=$((i + 1))
	echo "round $i of $rounds" >&2
	"$tmp/acks.test" -test.run '^$' -test.bench 'BenchmarkProcessLibrary' -test.benchtime "${LIBMSGS:-30000}x" >>"$tmp/out"
	if [ -n "${BASE:-}" ]; then
		(cd "$tmp/base/jsutil/acks" && "$tmp/base.test" -test.run '^$' -test.bench 'BenchmarkProcessLibrary/records' -test.benchtime "${LIBMSGS:-30000}x") |
			sed 's/^BenchmarkProcessLibrary/BeforeProcessLibrary/' >>"$tmp/out"
	fi
	if [ "${CLI:-1}" != 0 ]; then
		"$tmp/acks.test" -test.run '^$' -test.bench 'BenchmarkProcessCLI' -test.benchtime "${CLIMSGS:-5000}x" -acks.jsctl "$tmp/jsctl" >>"$tmp/out"
	fi
done
if [ "${PROFILE:-0}" != 0 ]; then
	echo "profiled pass" >&2
	"$tmp/acks.test" -test.run '^$' -test.bench 'BenchmarkProcessLibrary/(records|prefetch)' -test.benchtime "${LIBMSGS:-30000}x" \
		-acks.profile "$tmp/prof" -acks.profilesecs "${PROFSECS:-15}" >/dev/null
fi
if [ "${CLI:-1}" != 0 ]; then
	"$tmp/acks.test" -test.run '^$' -test.bench 'BenchmarkProcessMemory' -test.benchtime 1x -acks.jsctl "$tmp/jsctl" \
		-acks.memmsgs "${MEMMSGS:-10000,1000000}" -test.timeout 60m >>"$tmp/out"
fi
echo "machine: $(nproc) cores (load average $(cut -d" " -f1-3 /proc/loadavg) at the end, shared with other builds), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo); $(go version | cut -d' ' -f3); nats-server $(go list -m -f '{{.Version}}' github.com/nats-io/nats-server/v2), separate process on 127.0.0.1"
echo
awk -v base="${BASE:-}" '
function median(key,   n, i, j, t, v) {
	n = cnt[key]; if (n == 0) return 0
	for (i = 1; i <= n; i++) v[i] = vals[key, i]
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
	return (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
/^(Benchmark|Before)/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	for (i = 2; i < NF; i++) if ($(i+1) ~ /^(msgs\/s|in_msgs\/msg|peak_rss_kb|jsctl_cpu_us\/msg|client_cpu_us\/msg|server_cpu_us\/msg)$/) {
		key = name SUBSEP $(i+1); vals[key, ++cnt[key]] = $i
	}
}
END {
	m = "msgs/s"; q = "in_msgs/msg"; r = "peak_rss_kb"; cc = "client_cpu_us/msg"; sc = "server_cpu_us/msg"
	L = "BenchmarkProcessLibrary/"; C = "BenchmarkProcessCLI/"
	rec1 = median(L "records/workers=1" SUBSEP m); rec16 = median(L "records/workers=16" SUBSEP m)
	pl1 = median(L "plain/workers=1" SUBSEP m); pl16 = median(L "plain/workers=16" SUBSEP m)
	pf1 = median(L "prefetch/workers=1" SUBSEP m); pf16 = median(L "prefetch/workers=16" SUBSEP m)
	if (rec1 == 0 || pl1 == 0 || pf1 == 0) { print "no benchmark results" > "/dev/stderr"; exit 1 }
	printf "%-52s %14s %14s\n", "library (empty handler)", "1 worker", "16 workers"
	printf "%-52s %8.0f msg/s %8.0f msg/s\n", "with ack records (Store.Consume)", rec1, rec16
	printf "%-52s %8.0f msg/s %8.0f msg/s\n", "plain, one message per worker at a time, DoubleAck", pl1, pl16
	printf "%-52s %8.0f msg/s %8.0f msg/s\n", "plain, prefetching (Messages), DoubleAck", pf1, pf16
	printf "%-52s %13.2fx %13.2fx\n", "records over plain, one at a time", rec1 / pl1, rec16 / pl16
	printf "%-52s %13.2fx %13.2fx\n", "records over plain, prefetching", rec1 / pf1, rec16 / pf16
	B = "BeforeProcessLibrary/records/"
	if ((b1 = median(B "workers=1" SUBSEP m)) > 0) {
		printf "%-52s %8.0f msg/s %8.0f msg/s\n", "with ack records, before (" base ")", b1, median(B "workers=16" SUBSEP m)
		printf "%-52s %13.2fx %13.2fx\n", "before over plain, prefetching", b1 / pf1, median(B "workers=16" SUBSEP m) / pf16
		printf "%-52s %14.2f %14.2f\n", "server inbound msgs per message, before", median(B "workers=1" SUBSEP q), median(B "workers=16" SUBSEP q)
		printf "%-52s %7.0f + %4.0f %7.0f + %4.0f\n", "CPU us per message (client + server), before", median(B "workers=1" SUBSEP cc), median(B "workers=1" SUBSEP sc), median(B "workers=16" SUBSEP cc), median(B "workers=16" SUBSEP sc)
	}
	split("records plain prefetch", modes, " ")
	for (k = 1; k <= 3; k++) {
		mo = modes[k]
		printf "%-52s %14.2f %14.2f\n", "server inbound msgs per message, " mo, median(L mo "/workers=1" SUBSEP q), median(L mo "/workers=16" SUBSEP q)
	}
	for (k = 1; k <= 3; k++) {
		mo = modes[k]
		printf "%-52s %7.0f + %4.0f %7.0f + %4.0f\n", "CPU us per message (client + server), " mo, median(L mo "/workers=1" SUBSEP cc), median(L mo "/workers=1" SUBSEP sc), median(L mo "/workers=16" SUBSEP cc), median(L mo "/workers=16" SUBSEP sc)
	}
	if (median(C "exec" SUBSEP m) == 0) exit 0
	print ""
	ex = median(C "exec" SUBSEP m); ba = median(C "batch100" SUBSEP m); nr = median(C "batch100-norecords" SUBSEP m)
	printf "%-44s %14s %14s %14s\n", "jsctl consume (cat >/dev/null)", "msg/s", "inbound/msg", "peak RSS"
	printf "%-44s %14.0f %14.2f %11.1f MiB\n", "--exec per message, records", ex, median(C "exec" SUBSEP q), median(C "exec" SUBSEP r) / 1024
	printf "%-44s %14.0f %14.2f %11.1f MiB\n", "--batch 100, records", ba, median(C "batch100" SUBSEP q), median(C "batch100" SUBSEP r) / 1024
	printf "%-44s %14.0f %14.2f %11.1f MiB\n", "--batch 100, no records", nr, median(C "batch100-norecords" SUBSEP q), median(C "batch100-norecords" SUBSEP r) / 1024
	printf "%-44s %13.1fx\n", "--batch 100 over --exec per message", ba / ex
	printf "%-44s %13.2fx\n", "--batch 100, records over no records", ba / nr
	print ""
	printf "%-44s %14s %14s\n", "jsctl consume --batch 100, records", "msg/s", "peak RSS"
	for (k in cnt) if (k ~ /^BenchmarkProcessMemory\/msgs=/ && k ~ (SUBSEP "peak_rss_kb$")) {
		split(k, parts, SUBSEP); name = parts[1]; sub(/^BenchmarkProcessMemory\//, "", name)
		printf "%-44s %14.0f %11.1f MiB\n", name, median(parts[1] SUBSEP m), median(k) / 1024
	}
}' "$tmp/out"
if [ "${PROFILE:-0}" != 0 ]; then
	echo
	printf '%-40s %14s %14s %14s %14s\n' "server CPU us per message, by family" "records, 1" "records, 16" "prefetch, 1" "prefetch, 16"
	for run in records-workers=1 records-workers=16 prefetch-workers=1 prefetch-workers=16; do
		go tool pprof -traces "$tmp/prof/$run.pprof" 2>/dev/null |
			awk -v msgs="$(cat "$tmp/prof/$run.msgs")" -f jsutil/acks/profsplit.awk >"$tmp/prof/$run.split"
	done
	paste "$tmp/prof/records-workers=1.split" "$tmp/prof/records-workers=16.split" \
		"$tmp/prof/prefetch-workers=1.split" "$tmp/prof/prefetch-workers=16.split" |
		awk -F'\t' '{ printf "%-40s %14s %14s %14s %14s\n", $1, $2, $4, $6, $8 }'
fi
