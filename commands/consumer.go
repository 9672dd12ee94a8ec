package commands

import (
	"github.com/jsctl/jsctl/jsutil/positions"
)

// ConsumerCmd groups the consumer commands.
type ConsumerCmd struct {
	Ls       ConsumerLsCmd       `cmd:"" help:"List consumers with their positions and lag."`
	Info     ConsumerInfoCmd     `cmd:"" help:"Show one consumer's position, lag and configuration."`
	Reset    ConsumerResetCmd    `cmd:"" help:"Move durable consumers to a time or sequence (plan first, undoable)."`
	History  ConsumerHistoryCmd  `cmd:"" help:"List a consumer's recorded resets."`
	Pause    ConsumerPauseCmd    `cmd:"" help:"Pause a consumer: it keeps its position and delivers nothing until resumed."`
	Resume   ConsumerResumeCmd   `cmd:"" help:"Resume a paused consumer."`
	Check    ConsumerCheckCmd    `cmd:"" help:"Check consumers against thresholds (Nagios and Prometheus output, exit 0-3)."`
	Snapshot ConsumerSnapshotCmd `cmd:"" help:"Save consumer positions under a name, compare with them, list and remove them."`
}

// streamsFlag is --streams, which selects streams by name pattern for the
// commands that work across streams (consumer ls, check, snapshot save).
type streamsFlag struct {
	Streams []string `name:"streams" placeholder:"GLOB" help:"Select streams whose names match GLOB ('*', '?', '[a-z]'; repeatable) instead of naming one; KV_ and OBJ_ streams only when GLOB starts so."`
}

// selection builds the library selection from a stream argument, consumer
// arguments, --all and --streams.
func (f streamsFlag) selection(stream string, consumers []string, all bool) positions.Selection {
	return positions.Selection{Stream: stream, Streams: f.Streams, Consumers: consumers, All: all}
}

// positionsOptions are the library options from the global flags.
func positionsOptions(env *Env, acksBucket string) positions.Options {
	return positions.Options{Timeout: env.Globals.Timeout, Now: env.Now, AcksBucket: acksBucket}
}
