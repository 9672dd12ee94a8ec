package commands

import (
	"context"
	"fmt"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/audit"
	"github.com/jsctl/jsctl/jsutil/positions"
)

// ConsumerPauseCmd pauses a consumer with the server's pause API.
type ConsumerPauseCmd struct {
	Stream   string `arg:"" predictor:"stream" help:"Stream of the consumer."`
	Consumer string `arg:"" predictor:"consumer" help:"Consumer to pause."`
	Until    string `name:"until" placeholder:"TIME" predictor:"time" help:"Pause until TIME (any form listed under Times in jsctl --help, e.g. +2h or \"2026-11-29 12:00\")."`
	For      string `name:"for" placeholder:"DURATION" help:"Pause for DURATION from now (90m, 2h, 1d)."`
	oneChangeFlags
}

// Help is the long help of consumer pause.
func (ConsumerPauseCmd) Help() string {
	return `Pauses a consumer with the server's pause API (nats-server 2.11 or later): it
keeps its position and configuration, answers no pull requests and pushes nothing
until the pause ends by itself or "jsctl consumer resume" ends it. Clients stay
connected; pull requests wait. Without --until or --for it stays paused until
resumed. "jsctl consumer ls" and "consumer info" show the pause. It acts at
once; at a terminal it asks first unless --yes, and --dry-run only says what it
would do.

--json prints {"stream","consumer","paused","pause_until","until_resumed"}.

Examples:
  jsctl consumer pause ORDERS billing --for 30m
  jsctl consumer pause ORDERS billing --until "2026-11-29 12:00"
  jsctl consumer pause ORDERS billing                  # until jsctl consumer resume
  jsctl consumer resume ORDERS billing`
}

// Validate checks the flag combination.
func (c *ConsumerPauseCmd) Validate() error {
	if c.Until != "" && c.For != "" {
		return jsutil.Errorf(jsutil.ErrBadInput, "give --until or --for, not both")
	}
	return nil
}

// Run pauses the consumer.
func (c *ConsumerPauseCmd) Run(ctx context.Context, env *Env) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	until := positions.UntilResumed()
	switch {
	case c.Until != "":
		if until, err = env.ParseTime(c.Until); err != nil {
			return err
		}
		if !until.After(env.Now()) {
			return jsutil.Errorf(jsutil.ErrBadInput, "pause consumer %q on %q: --until %s is not in the future (write +2h for two hours from now)", c.Consumer, c.Stream, c.Until)
		}
	case c.For != "":
		d, err := jsutil.ParseDuration(c.For)
		if err != nil {
			return err
		}
		if d <= 0 {
			return jsutil.Errorf(jsutil.ErrBadInput, "pause consumer %q on %q: --for wants a positive duration, got %s", c.Consumer, c.Stream, c.For)
		}
		until = env.Now().Add(d)
	}
	what := fmt.Sprintf("pause consumer %s on %s until resumed", Escape(c.Consumer), Escape(c.Stream))
	if !until.Equal(positions.UntilResumed()) {
		what = fmt.Sprintf("pause consumer %s on %s until %s", Escape(c.Consumer), Escape(c.Stream), p.Time(until))
	}
	if ok, err := askOne(ctx, env, p, c.oneChangeFlags, what, fmt.Sprintf("pause consumer %q on %q", c.Consumer, c.Stream)); err != nil || !ok {
		return err
	}
	cl, err := env.Client(ctx)
	if err != nil {
		return err
	}
	obj := auditObject{c.Stream, c.Consumer}
	ch, err := env.beginChange(ctx, cl, audit.Pause, []auditObject{obj})
	if err != nil {
		return err
	}
	st, err := positions.Pause(ctx, cl.JS, c.Stream, c.Consumer, until, positionsOptions(env, ""))
	if err != nil {
		return err
	}
	target := "until resumed"
	if !st.UntilResumed && st.PauseUntil != nil {
		target = "until " + st.PauseUntil.UTC().Format(time.RFC3339Nano)
	}
	ch.ended(ctx, auditEnd{auditObject: obj, Outcome: audit.Verified, Target: target})
	return ch.close(printPauseState(p, st, env.Now()))
}

// printPauseState reports a consumer's pause state after pause or resume.
func printPauseState(p *Printer, st *positions.PauseState, now time.Time) error {
	if p.JSON {
		return p.PrintJSON(st)
	}
	switch {
	case !st.Paused:
		p.Printf("Consumer %s on %s is not paused: it delivers messages.\n", st.Consumer, st.Stream)
	case st.UntilResumed:
		p.Printf("Paused consumer %s on %s until resumed (jsctl consumer resume %s %s).\n", st.Consumer, st.Stream, st.Stream, st.Consumer)
	default:
		left := st.PauseUntil.Sub(now).Round(time.Second)
		p.Printf("Paused consumer %s on %s until %s (%s from now).\n", st.Consumer, st.Stream, p.Time(*st.PauseUntil), left)
	}
	return nil
}
