package commands

import (
	"context"
	"strings"

	"github.com/jsctl/jsctl/jsutil/reset"
)

// ConsumerInfoCmd shows one consumer's position, lag and configuration.
type ConsumerInfoCmd struct {
	Stream   string `arg:"" predictor:"stream" help:"Stream of the consumer."`
	Consumer string `arg:"" predictor:"consumer" help:"Consumer to show."`
}

// Help is the long help of consumer info.
func (ConsumerInfoCmd) Help() string {
	return `Shows a consumer's position as a stream sequence and as the time of that
message, its lag in messages and in time, what is pending and waiting, and
whether it is paused. --json prints the full record with the configuration.
A change left unfinished by an interrupted run is named in a warning on
stderr (in --json, the "unfinished_change" field), with the command that
finishes it.

Examples:
  jsctl consumer info ORDERS billing
  jsctl consumer info ORDERS billing --json`
}

// Run shows the consumer.
func (c *ConsumerInfoCmd) Run(ctx context.Context, env *Env) error {
	cl, p, err := env.Session(ctx)
	if err != nil {
		return err
	}
	s, err := reset.Describe(ctx, cl.JS, c.Stream, c.Consumer, env.Now())
	if err != nil {
		return err
	}
	warnSkipped(env, s.SkippedRecords)
	warnUnknown(env, s)
	if p.JSON {
		return p.PrintJSON(s)
	}
	if s.Unfinished != nil {
		warnUnfinished(env, p, []reset.Unfinished{*s.Unfinished})
	}
	filters := strings.Join(s.Filters, ", ")
	if filters == "" {
		filters = "(all subjects)"
	}
	paused := yesNo(s.Paused)
	if s.PauseUntil != nil {
		paused += " (until " + p.Time(*s.PauseUntil) + ")"
	}
	rows := [][]string{
		{"Stream:", Escape(s.Stream)},
		{"Consumer:", Escape(s.Consumer)},
		{"Type:", consumerKind(s)},
		{"Deliver policy:", s.DeliverPolicy},
		{"Ack policy:", s.AckPolicy},
		{"Filter subjects:", filters},
		{"Delivered:", u64(s.Delivered) + " at " + optTime(p, s.DeliveredTime)},
		{"Ack floor:", u64(s.AckFloor) + " at " + optTime(p, s.AckFloorTime)},
		{"Pending:", u64(s.Pending)},
		{"Ack pending:", itoa(s.AckPending)},
		{"Redelivered:", itoa(s.Redelivered)},
		{"Waiting:", itoa(s.Waiting)},
		{"Push bound:", yesNo(s.PushBound)},
		{"Paused:", paused},
		{"Lag:", u64(s.LagMessages) + " messages, " + lagText(s.LagNS)},
	}
	for _, r := range rows {
		p.Printf("%-17s%s\n", r[0], r[1])
	}
	return nil
}
