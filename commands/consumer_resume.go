package commands

import (
	"context"
	"fmt"

	"github.com/jsctl/jsctl/jsutil/audit"
	"github.com/jsctl/jsctl/jsutil/positions"
)

// ConsumerResumeCmd ends consumers' pauses.
type ConsumerResumeCmd struct {
	Stream    string   `arg:"" optional:"" predictor:"stream" help:"Stream of the consumers (or --streams)."`
	Consumers []string `arg:"" optional:"" predictor:"consumer" help:"Consumers to resume (or --all)."`
	All       bool     `name:"all" help:"Resume every paused durable consumer of the stream (of each stream with --streams)."`
	streamsFlag
	changeFlags
}

// Help is the long help of consumer resume.
func (ConsumerResumeCmd) Help() string {
	return `Ends consumers' pauses (see jsctl consumer pause): each delivers again from where
it stopped. A consumer that is not paused is left as it is (the plan says
"unchanged").

Without --execute it prints the plan (one line per consumer) and changes
nothing, terminal or not; with --execute at a terminal it asks first unless
--yes, and without a terminal it applies (as consumer reset). The old
immediate form, --yes without --execute, still applies, with a note on stderr;
it will be removed.

--json prints the plan, {"executed":false,"consumers":[{"stream","consumer",
"now":{...},"changes"}]}, and once applied {"executed":true,"consumers":[{"stream",
"consumer","paused":false,"pause_until":null,"until_resumed":false}]}.

Examples:
  jsctl consumer resume ORDERS billing                 # the plan
  jsctl consumer resume ORDERS billing --execute
  jsctl consumer resume ORDERS --all --execute         # after consumer copy --pause-origin
  jsctl consumer resume --streams 'ORD*' --all --execute --json`
}

// Validate checks the selection and the contract's flags.
func (c *ConsumerResumeCmd) Validate() error {
	if err := c.selection(c.Stream, c.Consumers, c.All).Validate(); err != nil {
		return err
	}
	return c.changeFlags.validateList()
}

// Run plans the resume and, as the contract decides, applies it.
func (c *ConsumerResumeCmd) Run(ctx context.Context, env *Env) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	cl, err := env.Client(ctx)
	if err != nil {
		return err
	}
	targets, err := readPauseTargets(ctx, env, cl, c.selection(c.Stream, c.Consumers, c.All), "resume")
	if err != nil {
		return err
	}
	if len(targets) == 0 {
		return printNoPauseTargets(p, c.Streams)
	}
	n := 0
	for i, t := range targets {
		targets[i].changes = t.now.Paused
		if t.now.Paused {
			n++
		}
	}
	l := &listChange{
		command: "consumer resume", action: "resume consumers on " + selectionText(c.Stream, c.Streams),
		title:   fmt.Sprintf("Resume %s (of %s):", plural(n, "paused consumer", "paused consumers"), plural(len(targets), "consumer", "consumers")),
		headers: []string{"STREAM", "CONSUMER", "NOW", "AFTER"}, rows: pauseRows(p, targets, "delivering"), changes: n,
		plan: func() any { return pausePlanDoc(targets) },
	}
	legacy := c.immediateForm() && c.Stream != "" && len(c.Consumers) == 1
	l.apply = func() error {
		ch, err := env.beginChange(ctx, cl, audit.Resume, pauseObjects(targets))
		if err != nil {
			return err
		}
		var done []*positions.PauseState
		for _, t := range targets {
			st := t.now
			if t.changes {
				obj := auditObject{t.now.Stream, t.now.Consumer}
				if err := samePauseTarget(ctx, env, cl, t, "resume"); err != nil {
					ch.ended(ctx, auditEnd{auditObject: obj, Outcome: audit.Failed, Err: err})
					return ch.close(err)
				}
				if st, err = positions.Resume(ctx, cl.JS, t.now.Stream, t.now.Consumer, positionsOptions(env, "")); err != nil {
					ch.ended(ctx, auditEnd{auditObject: obj, Outcome: audit.Failed, Err: err})
					return ch.close(err)
				}
				ch.ended(ctx, auditEnd{auditObject: obj, Outcome: audit.Verified, Target: "resumed"})
			}
			done = append(done, st)
			switch {
			case p.JSON:
			case t.changes && !st.Paused:
				p.Printf("Resumed consumer %s on %s: it delivers messages again.\n", st.Consumer, st.Stream)
			default:
				if err := printPauseState(p, st, env.Now()); err != nil {
					return ch.close(err)
				}
			}
		}
		return ch.close(printPauseDone(p, done, legacy))
	}
	return l.run(ctx, env, p, c.changeFlags)
}
