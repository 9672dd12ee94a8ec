package commands

import (
	"context"
	"sort"
	"time"

	"github.com/jsctl/jsctl/jsutil"
	"github.com/jsctl/jsctl/jsutil/acks"
	"github.com/jsctl/jsctl/jsutil/positions"
)

// This file holds the completion lookups: time keywords, and the names that
// are asked from the server within the completer's server budget.

// timeCandidates are the keywords and common forms of a time argument.
func (c *completer) timeCandidates() []candidate {
	now := c.env.Now()
	if loc, err := c.env.Location(); err == nil {
		now = now.In(loc)
	}
	return []candidate{
		{"now", "the current time"},
		{"-15m", "15 minutes ago"},
		{"-1h", "an hour ago"},
		{"-24h", "24 hours ago"},
		{"1d", "a day ago"},
		{"2h ago", "two hours ago"},
		{now.Format("2006-01-02"), "today, midnight"},
		{now.Truncate(time.Hour).Format("2006-01-02 15:04"), "the start of this hour"},
		{now.AddDate(0, 0, -1).Format("2006-01-02"), "yesterday, midnight"},
	}
}

// connect opens the connection for lookups once, within the server budget.
// It returns nil when no server answers in time, and for --embedded:
// starting an in-process server over a store that another process may be
// using is neither cheap nor safe, so embedded stores offer no names.
func (c *completer) connect() *jsutil.Client {
	if c.tried {
		return c.client
	}
	c.tried = true
	c.serverCx, c.cancel = context.WithTimeout(c.ctx, c.serverBudget())
	if c.env.Globals.Embedded != "" {
		return nil
	}
	opts := c.env.ConnectOptions()
	opts.Timeout = c.serverBudget()
	opts.Name = "jsctl-completion"
	cl, err := jsutil.Connect(c.serverCx, opts)
	if err != nil {
		return nil
	}
	c.client = cl
	return cl
}

func (c *completer) streams() []string {
	cl := c.connect()
	if cl == nil {
		return nil
	}
	names, _ := jsutil.ListStreamNames(c.serverCx, cl.JS)
	return names
}

func (c *completer) consumers(stream string) []string {
	cl := c.connect()
	if cl == nil {
		return nil
	}
	names, _ := jsutil.ListConsumerNames(c.serverCx, cl.JS, stream)
	return names
}

func (c *completer) scopes(bucket string) []string {
	cl := c.connect()
	if cl == nil {
		return nil
	}
	names, _ := listScopes(c.serverCx, cl, bucket)
	return names
}

func (c *completer) snapshots() []string {
	cl := c.connect()
	if cl == nil {
		return nil
	}
	names, _ := positions.Names(c.serverCx, cl.JS, positions.Options{Timeout: c.serverBudget()})
	return names
}

// snapshotConsumers lists the consumers of snapshot name as snapshot
// restore takes them (CONSUMER, or STREAM/CONSUMER).
func (c *completer) snapshotConsumers(name string) []string {
	cl := c.connect()
	if cl == nil {
		return nil
	}
	snap, err := positions.Get(c.serverCx, cl.JS, name, positions.Options{Timeout: c.serverBudget()})
	if err != nil {
		return nil
	}
	return snap.ConsumerKeys()
}

// listScopes lists the scopes of the ack-record bucket, as --scope takes
// them (decoded, e.g. "ORDERS.billing").
func listScopes(ctx context.Context, cl *jsutil.Client, bucket string) ([]string, error) {
	st, err := acks.OpenExisting(ctx, cl.JS, bucket)
	if err != nil {
		return nil, err
	}
	scopes, err := st.Scopes(ctx)
	out := make([]string, 0, len(scopes))
	for _, s := range scopes {
		out = append(out, acks.ScopeDisplay(s))
	}
	sort.Strings(out)
	return out, err
}
