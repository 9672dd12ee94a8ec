#!/bin/sh
# Measures jsctl's start-up against a separate nats-server process (built
# from the pinned module) and prints a table: whole-process `jsctl seek`,
# `jsctl version`, one bare `nats req` (natscli) of the same message-get,
# and the least Go program that sends it; medians of interleaved runs, the
# garbage collections of one run, and each row over `nats req`.
#
#   internal/startup/bench.sh                   # 31 runs, natscli from PATH
#   RUNS=51 NATS=/path/to/nats BEFORE=7be4892 internal/startup/bench.sh
#
# natscli: go install github.com/nats-io/natscli/nats@v0.5.0. BEFORE (a
# commit) adds the rows of jsctl built from that commit.
set -eu
cd "$(dirname "$0")/../.."
set -- -startup.runs "${RUNS:-31}" -startup.nats "${NATS:-nats}"
if [ -n "${BEFORE:-}" ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	git archive "$BEFORE" | tar -x -C "$tmp"
	(cd "$tmp" && go build -o "$tmp/jsctl-before" ./cmd/jsctl)
	set -- "$@" -startup.before "$tmp/jsctl-before"
fi
if ! out=$(go test ./internal/startup -count=1 -run '^TestStartup$' -v -timeout 30m "$@" 2>&1); then
	printf '%s\n' "$out" >&2
	exit 1
fi
printf '%s\n' "$out" | grep -vE '^(=== RUN|--- PASS|PASS|ok )'
