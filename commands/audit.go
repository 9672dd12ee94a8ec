package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/audit"
	"github.com/nats-io/nats.go/jetstream"
)

// AuditCmd lists (or follows) the audit trail.
type AuditCmd struct {
	Stream   string   `arg:"" optional:"" predictor:"stream" help:"Only events of this stream."`
	Consumer string   `arg:"" optional:"" predictor:"consumer" help:"Only events of this consumer (with STREAM)."`
	Since    string   `name:"since" placeholder:"TIME" predictor:"time" help:"Only events stored at or after TIME."`
	Until    string   `name:"until" placeholder:"TIME" predictor:"time" help:"Only events stored at or before TIME."`
	Action   []string `name:"action" placeholder:"ACTION" enum:"reset,recover,snapshot.save,snapshot.restore,snapshot.rm,copy,pause,resume,acks.forget,acks.retry,acks.compact" predictor:"enum" help:"Only events of this action (repeatable): reset, recover, snapshot.save, snapshot.restore, snapshot.rm, copy, pause, resume, acks.forget, acks.retry or acks.compact."`
	By       string   `name:"by" placeholder:"USER" help:"Only events by USER: the OS user, or the NATS user name, JWT name or subject, or nkey."`
	Follow   bool     `short:"f" name:"follow" help:"After the stored events, print new ones as they come, until Ctrl-C (an ordered consumer: nothing is left on the server)."`
}

// Help is the long help of audit.
func (AuditCmd) Help() string {
	return `Lists the audit trail: one event per object every changing jsctl command
changed (consumer reset, recover, snapshot save/restore/rm, consumer copy,
pause, resume, acks forget/retry/compact), stored in the stream JSCTL_AUDIT on
jsctl.audit.<action>.<stream>.<consumer>. The table shows when, what, on which
consumer, by whom, the outcome (ok: verified) with the ack floor before and after,
and the reason; --json prints each event
as one JSON line (the schema is in docs/audit.md). --follow then waits for new
events until Ctrl-C. Messages on the stream that are not events jsctl can read
are reported on stderr by their sequence and skipped. TIME is when the server
stored the event; an event whose fields cannot be true (a time after it was
stored, sequences no stream reaches) is marked (!) and each such field is a
warning on stderr.

Examples:
  jsctl audit ORDERS --since -1d
  jsctl audit ORDERS billing --action reset --json
  jsctl audit --follow --json`
}

// Validate checks the arguments.
func (c *AuditCmd) Validate() error {
	if c.Consumer != "" && c.Stream == "" {
		return jsutil.Errorf(jsutil.ErrBadInput, "name the stream of consumer %q", c.Consumer)
	}
	for _, a := range c.Action {
		if !audit.Action(a).Known() {
			return jsutil.Errorf(jsutil.ErrBadInput, "--action %q: want one of %s", a, actionList())
		}
	}
	return nil
}

func actionList() string {
	var s []string
	for _, a := range audit.Actions() {
		s = append(s, string(a))
	}
	return strings.Join(s, ", ")
}

// Run prints the events.
func (c *AuditCmd) Run(ctx context.Context, env *Env) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	q := audit.Query{Stream: c.Stream, Consumer: c.Consumer, By: c.By, Follow: c.Follow, Timeout: env.Globals.Timeout}
	for _, a := range c.Action {
		q.Actions = append(q.Actions, audit.Action(a))
	}
	if c.Since != "" {
		if q.Since, err = env.ParseTime(c.Since); err != nil {
			return err
		}
	}
	if c.Until != "" {
		if q.Until, err = env.ParseTime(c.Until); err != nil {
			return err
		}
	}
	cl, err := env.Client(ctx)
	if err != nil {
		return err
	}
	if c.Follow {
		env.stopsOnSignal = true // Ctrl-C is how --follow ends
	}
	n := 0
	header := false
	err = audit.Read(ctx, cl.JS, q, func(e *audit.Event) error {
		n++
		for _, w := range e.Warnings {
			fmt.Fprintf(env.Stderr, "jsctl: warning: audit event %s (%s %s/%s, stored %s) cannot be true: %s\n",
				TermSafe(e.ID), TermSafe(string(e.Action)), TermSafe(e.Stream.Name), TermSafe(e.Consumer.Name), e.Stored.UTC().Format(time.RFC3339Nano), TermSafe(w))
		}
		if p.JSON {
			return p.PrintJSONLine(e)
		}
		if !header {
			header = true
			p.Printf("%s\n", auditHeader)
		}
		p.Printf("%s\n", auditLine(p, e))
		return nil
	}, func(b audit.Bad) {
		fmt.Fprintf(env.Stderr, "jsctl: warning: %s\n", TermSafe(b.String()))
	})
	if errors.Is(err, jsutil.ErrNotFound) && !c.Follow && !streamExists(ctx, cl, audit.Stream) {
		// No change has been recorded: an empty trail, not an error.
		if !p.JSON {
			p.Printf("No audit events: the stream %s does not exist yet (the first change jsctl makes creates it).\n", audit.Stream)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if n == 0 && !p.JSON && !c.Follow {
		p.Printf("No audit events match.\n")
	}
	return nil
}

// The table's columns: at most 80 characters a line.
const (
	auditTimeW   = 14
	auditActionW = 16
	auditObjectW = 18
	auditByW     = 8
	auditLineW   = 80
)

var auditHeader = fmt.Sprintf("%-*s %-*s %-*s %-*s %s", auditTimeW, "TIME", auditActionW, "ACTION", auditObjectW, "STREAM/CONSUMER", auditByW, "BY", "CHANGE")

// auditLine is one event as a table line of at most 80 columns: names cut
// with "…" (escaped first, so no name can garble the terminal).
func auditLine(p *Printer, e *audit.Event) string {
	// The time the server stored the event: the event's own time is
	// whatever its publisher wrote (--json has both).
	t := e.Stored.In(p.Loc).Format("01-02 15:04:05")
	obj := Escape(e.Stream.Name)
	if e.Consumer.Name != "" {
		obj += "/" + Escape(e.Consumer.Name)
	}
	by := e.User
	if n := e.NATS.String(); n != "" {
		by = n
	}
	change := auditChange(e)
	if len(e.Warnings) > 0 {
		change = "(!) " + change // its fields cannot all be true: see the warnings
	}
	line := fmt.Sprintf("%-*s %-*s %-*s %-*s %s", auditTimeW, t, auditActionW, cutRunes(string(e.Action), auditActionW),
		auditObjectW, cutRunes(obj, auditObjectW), auditByW, cutRunes(Escape(by), auditByW), change)
	return cutRunes(line, auditLineW)
}

// auditChange says what changed, shortly: the outcome ("ok" for
// verified) and the ack floor before and after ("ok 120→40"), a pause, a
// create, or the target; then the reason.
func auditChange(e *audit.Event) string {
	s := string(e.Outcome)
	if e.Outcome == audit.Verified {
		s = "ok"
	}
	b, a := e.Before, e.After
	switch {
	case b != nil && a != nil && b.AckFloor != a.AckFloor:
		s += fmt.Sprintf(" %d→%d", b.AckFloor, a.AckFloor)
	case b != nil && a != nil && b.Paused != a.Paused:
		s += map[bool]string{true: " paused", false: " resumed"}[a.Paused]
	case b == nil && a != nil:
		s += fmt.Sprintf(" new at %d", a.AckFloor)
	case e.Target != "":
		s += " " + Escape(e.Target)
	}
	if e.Recovers != "" {
		s += " of " + Escape(e.Recovers)
	}
	if e.Reason != "" {
		s += ": " + Escape(e.Reason)
	}
	return s
}

// streamExists reports whether stream name exists (true when it cannot be
// told: the error of the read then stands).
func streamExists(ctx context.Context, cl *jsutil.Client, name string) bool {
	rctx, cancel := context.WithTimeout(ctx, cl.Timeout)
	defer cancel()
	_, err := cl.JS.Stream(rctx, name)
	return !errors.Is(err, jetstream.ErrStreamNotFound)
}
