package commands

import (
	"reflect"
	"strings"
	"time"
	"unicode"

	"github.com/alecthomas/kong"
	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/positions"
)

// ConsumerCmd groups the consumer commands.
type ConsumerCmd struct {
	Ls       ConsumerLsCmd       `cmd:"" help:"List consumers with their positions and lag."`
	Info     ConsumerInfoCmd     `cmd:"" help:"Show one consumer's position, lag and configuration."`
	Reset    ConsumerResetCmd    `cmd:"" help:"Move durable consumers to a time or sequence (plan first, undoable)."`
	History  ConsumerHistoryCmd  `cmd:"" help:"List a consumer's recorded resets."`
	Recover  ConsumerRecoverCmd  `cmd:"" help:"Finish consumer changes left unfinished by an interrupted run."`
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

// maxNameLen is the server's limit for stream and consumer names
// (JSMaxNameLen).
const maxNameLen = 255

// checkName says why name cannot be a stream or consumer name (kind says
// which), as the server judges names: not empty, at most 255 bytes, no
// white space, control characters, ".", "*", ">", "/" or "\". A bad name
// is bad input: without this the server never answers the request and
// jsctl waited out --timeout.
func checkName(kind, name string) error {
	bad := name == "" || len(name) > maxNameLen || strings.ContainsAny(name, `.*>/\`) ||
		strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0
	if !bad {
		return nil
	}
	return jsutil.Errorf(jsutil.ErrBadInput, "invalid %s name %q: a name is 1 to %d bytes without spaces, control characters, \".\", \"*\", \">\", \"/\" or \"\\\"", kind, name, maxNameLen)
}

// checkArgs checks, before a command runs and before anything connects,
// every value given on the command line that names a stream or a consumer
// (arguments and flags tagged predictor:"stream" or predictor:"consumer":
// every consumer command and any command added later), and that no duration
// is negative.
func checkArgs(kctx *kong.Context) error {
	for _, el := range kctx.Path {
		var v *kong.Value
		switch {
		case el.Positional != nil:
			v = el.Positional
		case el.Flag != nil:
			v = el.Flag.Value
		default:
			continue
		}
		switch kind := v.Tag.Get("predictor"); kind {
		case predictStream, predictConsumer:
			for _, name := range stringValues(v.Target) {
				if err := checkName(kind, name); err != nil {
					return err
				}
			}
		}
		if d, ok := v.Target.Interface().(time.Duration); ok && d < 0 {
			return jsutil.Errorf(jsutil.ErrBadInput, "%s: a negative duration is not allowed, got %s", flagOrArg(v), d)
		}
	}
	return nil
}

func flagOrArg(v *kong.Value) string {
	if v.Flag != nil {
		return "--" + v.Name
	}
	return v.Name
}

// stringValues returns a string or []string target's values.
func stringValues(target reflect.Value) []string {
	switch t := target.Interface().(type) {
	case string:
		return []string{t}
	case []string:
		return t
	}
	return nil
}
