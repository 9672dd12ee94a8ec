package commands

// StreamCmd groups the stream subcommands.
type StreamCmd struct {
	Timeline StreamTimelineCmd `cmd:"" help:"Show message counts per time bucket, to see where traffic changed."`
}
