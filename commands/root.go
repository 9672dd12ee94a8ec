package commands

import (
	"fmt"
	"os"
	"strings"

	"github.com/alecthomas/kong"
)

// CLI is the root command: it only lists the commands.
type CLI struct {
	Globals

	Seek       SeekCmd       `cmd:"" help:"Find the stream sequence for a time."`
	Stream     StreamCmd     `cmd:"" help:"Look at streams."`
	Pick       PickCmd       `cmd:"" help:"Choose a moment on screen and move a consumer there (interactive reset)."`
	Consumer   ConsumerCmd   `cmd:"" help:"List, inspect, reset, pause, check and snapshot durable consumers."`
	Consume    ConsumeCmd    `cmd:"" help:"Run a command once per message, idempotently (ack records in KV)."`
	Acks       AcksCmd       `cmd:"" help:"Inspect and manage ack records (ls, get, forget, stats, compact, retry)."`
	Audit      AuditCmd      `cmd:"" help:"List or follow the audit trail: who changed what, from where to where, and why."`
	Demo       DemoCmd       `cmd:"" help:"Walk through seek, reset and idempotent processing on a throw-away server."`
	Serve      ServeCmd      `cmd:"" help:"Run an embedded JetStream server in the foreground."`
	Completion CompletionCmd `cmd:"" help:"Print a shell completion script (bash, zsh or fish)."`
	Version    VersionCmd    `cmd:"" help:"Print the jsctl version and the Go version."`
	Man        ManCmd        `cmd:"" help:"Print jsctl's manual page (roff), made from the command model."`
	Complete   CompleteCmd   `cmd:"" name:"__complete" hidden:"" passthrough:"" help:"Print completions (used by the completion scripts)."`
}

const rootHelp = `A control-plane CLI for NATS JetStream: find the stream sequence for a time,
move durable consumers there safely, and process streams without doing any
message twice.

Examples:
  # the three jobs, end to end, on a throw-away server
  jsctl demo
  # the exact sequence for a time, with neighbours
  jsctl seek ORDERS "2026-11-29 10:00:00" --around 3
  # where traffic changed
  jsctl stream timeline ORDERS --since -6h
  # plan a rewind; add --execute to apply it
  jsctl consumer reset ORDERS billing --to-time 10:00
  # Nagios/Prometheus health check (exit 0-3)
  jsctl consumer check ORDERS --all --lag-warn 1000
  # run a handler once per message
  jsctl consume ORDERS billing --exec ./bill.sh
  # a development server on 127.0.0.1:4222
  jsctl serve --store ./data
  # any command against an in-process server
  jsctl --embedded ./data seek ORDERS -1h

Times (everywhere a time is accepted):
  RFC 3339 (2026-11-29T10:00:00Z), "2026-11-29 10:00:05", "2026-11-29",
  "10:00:05" (today, in --tz), Unix seconds/ms/µs/ns by magnitude (1795946400),
  @1795946400, now, -90m, "2h ago", now-1d12h, 1d.

` + exitCodesHelp + `

Help topics: jsctl help times|exit-codes|connecting|permissions|handler; jsctl help
COMMAND...`

// BeforeApply names a command's missing arguments before any of its own
// checks run: kong checks them after the commands' Validate methods, which
// would otherwise ask for a flag or a time first ("jsctl seek" asked for
// the time, not the stream).
func (c *CLI) BeforeApply(kctx *kong.Context) error {
	return missingArgs(kctx)
}

// missingArgs is kong's own message for the required arguments of the
// selected command that the command line does not give.
func missingArgs(kctx *kong.Context) error {
	node := kctx.Selected()
	if node == nil {
		return nil
	}
	given := map[*kong.Value]bool{}
	for _, p := range kctx.Path {
		if p.Positional != nil {
			given[p.Positional] = true
		}
	}
	var missing []string
	for _, p := range node.Positional {
		if p.Required && !given[p] && !envSet(p.Tag.Envs) {
			missing = append(missing, "<"+p.Name+">")
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("expected %q", strings.Join(missing, " "))
}

func envSet(names []string) bool {
	for _, n := range names {
		if _, ok := os.LookupEnv(n); ok {
			return true
		}
	}
	return false
}
