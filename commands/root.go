package commands

// CLI is the root command: it only lists the commands.
type CLI struct {
	Globals

	Version VersionCmd `cmd:"" help:"Print the jsctl version and the Go version."`
	Serve   ServeCmd   `cmd:"" help:"Run an embedded JetStream server in the foreground."`
}

const rootHelp = `A control-plane CLI for NATS JetStream: find the stream sequence for a time,
move durable consumers there safely, and process streams without doing any message twice.

Examples:
  jsctl serve --store ./data                       # a development server on 127.0.0.1:4222
  jsctl --embedded ./data version                  # any command against an in-process server

Times (everywhere a time is accepted):
  RFC 3339 (2026-11-29T10:00:00Z), "2026-11-29 10:00:05", "2026-11-29", "10:00:05" (today, in --tz),
  Unix seconds/ms/ns (1764410400), @1764410400, now, -90m, "2h ago", now-1d12h, 1d.

` + exitCodesHelp
