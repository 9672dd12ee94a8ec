package commands

import (
	"context"
	"fmt"

	"github.com/jsctl/jsctl/jsutil/audit"

	"github.com/jsctl/jsctl/jsutil/positions"
)

// ConsumerResumeCmd ends a consumer's pause.
type ConsumerResumeCmd struct {
	Stream   string `arg:"" predictor:"stream" help:"Stream of the consumer."`
	Consumer string `arg:"" predictor:"consumer" help:"Consumer to resume."`
	oneChangeFlags
}

// Help is the long help of consumer resume.
func (ConsumerResumeCmd) Help() string {
	return `Ends a consumer's pause (see jsctl consumer pause): it delivers again from where
it stopped. Resuming a consumer that is not paused changes nothing. At a
terminal it asks first unless --yes; --dry-run only says what it would do.

--json prints {"stream","consumer","paused":false,"pause_until":null,"until_resumed":false}.

Examples:
  jsctl consumer resume ORDERS billing
  jsctl consumer resume ORDERS billing --json`
}

// Run resumes the consumer.
func (c *ConsumerResumeCmd) Run(ctx context.Context, env *Env) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	what := fmt.Sprintf("resume consumer %s on %s", Escape(c.Consumer), Escape(c.Stream))
	if ok, err := askOne(ctx, env, p, c.oneChangeFlags, what, fmt.Sprintf("resume consumer %q on %q", c.Consumer, c.Stream)); err != nil || !ok {
		return err
	}
	cl, err := env.Client(ctx)
	if err != nil {
		return err
	}
	obj := auditObject{c.Stream, c.Consumer}
	ch, err := env.beginChange(ctx, cl, audit.Resume, []auditObject{obj})
	if err != nil {
		return err
	}
	st, err := positions.Resume(ctx, cl.JS, c.Stream, c.Consumer, positionsOptions(env, ""))
	if err != nil {
		return err
	}
	ch.ended(ctx, auditEnd{auditObject: obj, Outcome: audit.Verified, Target: "resumed"})
	if !st.Paused && !p.JSON {
		p.Printf("Resumed consumer %s on %s: it delivers messages again.\n", st.Consumer, st.Stream)
		return ch.close(nil)
	}
	return ch.close(printPauseState(p, st, env.Now()))
}
