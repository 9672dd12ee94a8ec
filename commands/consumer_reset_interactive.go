package commands

import (
	"context"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/reset"
)

// maxShowMessages bounds --show-messages: each listed message is a request.
const maxShowMessages = 1000

// validateShow checks --show-messages and --interactive (n is the number
// of targets given).
func (c *ConsumerResetCmd) validateShow(n int) error {
	if c.ShowMessages < 0 || c.ShowMessages > maxShowMessages {
		return jsutil.Errorf(jsutil.ErrBadInput, "--show-messages must be from 0 to %d, got %d", maxShowMessages, c.ShowMessages)
	}
	if !c.Interactive {
		return nil
	}
	switch {
	case c.FromFile != "" || c.Export != "" || c.All || len(c.Streams) > 0 || c.DryRun:
		return jsutil.Errorf(jsutil.ErrBadInput, "--interactive moves one consumer: drop --from-file, --export, --all, --streams and --dry-run")
	case c.Stream == "":
		return jsutil.Errorf(jsutil.ErrBadInput, "--interactive needs the stream (or use jsctl pick to choose it)")
	case len(c.Consumers) > 1:
		return jsutil.Errorf(jsutil.ErrBadInput, "--interactive moves one consumer, got %d", len(c.Consumers))
	case n > 1 || n == 1 && c.ToTime == "":
		return jsutil.Errorf(jsutil.ErrBadInput, "--interactive picks the target on screen: drop the target flags (--to-time only sets where the cursor starts)")
	}
	return nil
}

// runInteractive is consumer reset --interactive: jsctl pick for one
// stream (and consumer).
func (c *ConsumerResetCmd) runInteractive(ctx context.Context, env *Env) error {
	consumer := ""
	if len(c.Consumers) == 1 {
		consumer = c.Consumers[0]
	}
	show := c.ShowMessages
	if show == 0 {
		show = 10
	}
	return runPickReset(ctx, env, pickRequest{
		stream: c.Stream, consumer: consumer, opts: c.options(env), what: "jsctl consumer reset --interactive",
		flags: pickFlags{At: c.ToTime, Mode: c.Mode, ShowMessages: show},
	})
}

// printChangeMessages prints the messages a change redelivers or skips
// (--show-messages): the first and last ones and their count.
func printChangeMessages(p *Printer, who string, c *reset.Change) {
	if c.MessagesTotal == nil {
		return
	}
	total := *c.MessagesTotal
	if total == 0 {
		p.Fitf("  %s: redelivers and skips no messages\n", who)
		return
	}
	verb := "redelivers"
	if c.MessagesKind == reset.MessagesSkip {
		verb = "skips"
	}
	what := "all of them"
	if uint64(len(c.Messages)) < total {
		what = "the first and the last"
	}
	p.Fitf("  %s: %s %s within its filters; %s:\n", who, verb, plural(int(total), "message", "messages"), what)
	half := (len(c.Messages) + 1) / 2
	for i, m := range c.Messages {
		if i == half && uint64(len(c.Messages)) < total {
			p.Printf("      …\n")
		}
		p.Printf("    %8d  %s  %s  %d bytes\n", m.Seq, p.Time(m.Time), Escape(m.Subject), m.Size)
	}
}
